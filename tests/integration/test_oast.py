"""The OAST reference deployment (oast/): DNS and HTTP callback listeners
whose answers tenant handlers decide. Every case of oast_cases.py runs here
with the `py` backend (a cold `coil py` per call); test_oast_serve.py holds
the same cases for the `serve` backend."""

import oast_cases

BACKENDS = ("py",)

for _backend in BACKENDS:
    oast_cases.install(globals(), _backend)


def test_oast_handlers_pass_coil_check():
    """Every example handler is clean under the gate (coil check exit 0)."""
    import glob
    import os
    import harness
    files = sorted(glob.glob(os.path.join(oast_cases.HANDLERS, "*.py")))
    assert len(files) >= 4, files
    for f in files:
        r = harness.check(harness.coil("check", f))
        assert r.stdout == "", harness.describe(r)


def test_oast_py_tenant_bundle_sets_uid_range():
    """With the py backend a tenant's `bundle` gives its runs their own uid
    range: t2's sandbox runs as 65534 mapped into 260000.., not the default
    bundle's range."""
    import json
    import os
    import subprocess
    import time
    import harness
    d = harness.tmpdir()
    with open(os.path.join(harness.REPO, "bundles", "python", "config.json")) as f:
        b = json.load(f)
    b["root"]["path"] = os.path.join(harness.REPO, "bundles", "python", "rootfs")
    for m in ("uidMappings", "gidMappings"):
        b["linux"][m] = [{"containerID": 0, "hostID": 260000, "size": 65536}]
    with open(os.path.join(d, "config.json"), "w") as f:
        json.dump(b, f)
    cfg = oast_cases.config()
    cfg["tenants"]["t2"]["bundle"] = d
    lst = oast_cases.Listener("py", cfg)
    want = 260000 + 65534
    seen = set()
    for _ in range(5):
        dig = subprocess.Popen(["dig", "@127.0.0.1", "-p", str(lst.dns_port),
                                "cpu.t2.oast.test", "+time=10", "+tries=1"],
                               stdout=subprocess.DEVNULL)
        while dig.poll() is None:
            for pid in os.listdir("/proc"):
                try:
                    with open("/proc/%s/status" % pid) as f:
                        uids = [l for l in f if l.startswith("Uid:")][0].split()
                except (OSError, IndexError):
                    continue
                if int(uids[1]) == want:
                    seen.add(want)
            time.sleep(0.01)
        if want in seen:
            break
    assert want in seen, "t2's sandbox uid %d never seen" % want
    lst.stop()


def test_oast_key_lock_bounds_a_wait_and_serializes():
    """Calls for one state key: a free key is taken at once, a held one is
    waited for at most wait_s (then Busy), and once released the next call
    takes it."""
    import asyncio
    import sys
    import harness
    sys.path.insert(0, harness.REPO)
    from oast.tenants import Busy, Tenant
    t = Tenant({"name": "t", "limits": {"state_keys_max": 8, "queue_ms": 200}})

    async def scenario():
        first = await t.key_lock("k", 5.0)
        loop = asyncio.get_running_loop()
        t0 = loop.time()
        try:
            await asyncio.wait_for(t.key_lock("k", 0.2), 10.0)
        except Busy:
            pass
        else:
            raise AssertionError("a held key was taken")
        assert 0.15 <= loop.time() - t0 < 5.0, loop.time() - t0
        waiter = asyncio.ensure_future(t.key_lock("k", 5.0))
        await asyncio.sleep(0.05)
        assert not waiter.done()
        t.key_unlock("k", first)
        second = await asyncio.wait_for(waiter, 5.0)
        t.key_unlock("k", second)
        assert t.key_locks == {}

    asyncio.run(scenario())
