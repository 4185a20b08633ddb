"""Device access: linux.resources.devices, the default allowlist and the
linux.devices nodes, enforced by the v1 devices cgroup and the v2 device
program. A container that may mknod (CAP_MKNOD is in the default set) must
still not open host devices it was not given."""

import json
import os
import stat

from harness import (DEFAULT_CAPS, NAMESPACES, check, coil, describe,
                     new_bundle, run, sh)

# Opening these for writing is harmless: nothing is written to them.
# (/dev/kmsg opened for reading needs CAP_SYSLOG too, so write-only it is.)
KMSG = ("c", 1, 11)
LOOP_CONTROL = ("c", 10, 237)
KVM = ("c", 10, 232)
LOOP0 = ("b", 7, 0)

# Root in the host's user namespace, as containerd and docker run it.
NO_USERNS = {"namespaces": [{"type": t} for t in NAMESPACES if t != "user"],
             "uidMappings": None, "gidMappings": None}


def _try_open(name, dev):
    """Shell that makes /dev/<name> as dev and opens it for writing without
    writing; prints mknod-ok, then OPENED or DENIED and the open's error."""
    t, major, minor = dev
    return ("mknod /dev/%s %s %d %d && echo %s-mknod-ok; "
            "if (exec 3>/dev/%s) 2>/tmp/err; then echo %s-OPENED; "
            "else echo %s-DENIED; cat /tmp/err; fi; " %
            (name, t, major, minor, name, name, name, name))


def _assert_denied(r, name):
    assert name + "-OPENED" not in r.stdout, describe(r)
    assert name + "-DENIED" in r.stdout, describe(r)


def _root_sh(script, resources=None):
    linux = dict(NO_USERNS)
    if resources is not None:
        linux["resources"] = {"devices": resources}
    return check(sh(script, linux=linux,
                    process={"capabilities": {"bounding": DEFAULT_CAPS,
                                              "effective": DEFAULT_CAPS,
                                              "permitted": DEFAULT_CAPS}}))


def test_host_devices_denied_by_default():
    r = _root_sh("".join(_try_open(n, d) for n, d in
                         (("kmsg", KMSG), ("loopctl", LOOP_CONTROL),
                          ("kvm", KVM), ("loop0", LOOP0))) +
                 "echo x > /dev/null && echo null-ok")
    for name in ("kmsg", "loopctl", "kvm", "loop0"):
        # mknod itself stays allowed, as in runc: the open is what counts.
        assert name + "-mknod-ok" in r.stdout, describe(r)
        _assert_denied(r, name)
    assert "Operation not permitted" in r.stdout, describe(r)
    assert "null-ok" in r.stdout, describe(r)


def test_config_deny_all_keeps_defaults():
    # containerd's first rule. As in runc the default allowlist and the
    # linux.devices nodes come after the config's rules: /dev/null stays.
    r = _root_sh(_try_open("kmsg", KMSG) +
                 "echo x > /dev/null && echo null-ok",
                 resources=[{"allow": False, "access": "rwm"}])
    _assert_denied(r, "kmsg")
    assert "null-ok" in r.stdout, describe(r)


def test_config_allow_rule_grants_only_that_device():
    r = _root_sh(_try_open("loopctl", LOOP_CONTROL) + _try_open("kvm", KVM),
                 resources=[{"allow": False, "access": "rwm"},
                            {"allow": True, "type": "c", "major": 10,
                             "minor": 237, "access": "rw"}])
    assert "loopctl-OPENED" in r.stdout, describe(r)
    _assert_denied(r, "kvm")


def test_config_rule_last_match_wins():
    # Allowing every char device, then denying one: the later rule decides.
    r = _root_sh(_try_open("loopctl", LOOP_CONTROL) + _try_open("kvm", KVM),
                 resources=[{"allow": True, "type": "c", "access": "rw"},
                            {"allow": False, "type": "c", "major": 10,
                             "minor": 232, "access": "rw"}])
    assert "loopctl-OPENED" in r.stdout, describe(r)
    _assert_denied(r, "kvm")


def test_inexpressible_rules_rejected():
    # A hole punched into an earlier wildcard of the other verdict: neither
    # the kernel's v1 list nor runc accept it; fail before anything runs.
    b = new_bundle(["true"], linux={"resources": {"devices": [
        {"allow": True, "type": "c", "major": 10, "access": "rw"},
        {"allow": False, "type": "c", "major": 10, "minor": 232,
         "access": "rw"}]}})
    r = run(b)
    assert r.returncode not in (0, None), describe(r)
    assert "linux.resources.devices[1]" in r.stderr, describe(r)


def test_bad_device_rule_rejected():
    for rule, field in (({"allow": True, "access": "rwx"}, "access"),
                        ({"allow": True, "access": ""}, "access"),
                        ({"access": "r"}, "allow"),
                        ({"allow": True, "type": "u", "access": "r"}, "type"),
                        ({"allow": True, "major": -2, "access": "r"},
                         "major")):
        b = new_bundle(["true"],
                       linux={"resources": {"devices": [rule]}})
        r = run(b)
        assert r.returncode not in (0, None), describe(r)
        assert "linux.resources.devices[0]." + field in r.stderr, describe(r)


def test_image_device_node_denied_in_user_namespace():
    # A world-writable node shipped in the image needs no capability at all.
    b = new_bundle(["sh", "-c",
                    "if (exec 3<>/node) 2>/tmp/err; then echo OPENED; "
                    "else echo DENIED; cat /tmp/err; fi"])
    node = os.path.join(b, "rootfs", "node")
    os.mknod(node, stat.S_IFCHR | 0o666, os.makedev(10, 237))
    os.chmod(node, 0o666)
    r = check(run(b))
    assert "OPENED" not in r.stdout, describe(r)
    assert "DENIED" in r.stdout and "Operation not permitted" in r.stdout, \
        describe(r)


def test_linux_devices_nodes_allowed():
    # As in runc, each node the config lists is allowed rwm; others are not.
    r = check(sh("if (exec 3<>/dev/loop-control) 2>/tmp/err; then "
                 "echo loopctl-OPENED; else cat /tmp/err; fi; " +
                 _try_open("kvm", KVM),
                 linux=dict(NO_USERNS, devices=[
                     {"path": "/dev/loop-control", "type": "c", "major": 10,
                      "minor": 237, "fileMode": 0o600, "uid": 0, "gid": 0}])))
    assert "loopctl-OPENED" in r.stdout, describe(r)
    _assert_denied(r, "kvm")


def test_features_say_device_rules_are_enforced():
    r = check(coil("features"))
    ann = json.loads(r.stdout)["annotations"]
    assert ann.get("org.coil.linux.resources.devices") == "true", describe(r)
