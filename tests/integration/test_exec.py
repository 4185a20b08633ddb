"""coil exec: a new process in a running container, as runc starts one. It
joins init's namespaces and cgroups, takes the config's (or --process's)
ids, capabilities, rlimits, no_new_privs and seccomp, and exits with the
process's status."""

import json
import os
import signal
import subprocess
import time

import harness
from harness import (base_config, cap_mask, check, coil, describe,
                     new_bundle, new_id, new_root, popen, state, tmpdir,
                     wait_status)
from test_console import ConsoleServer, read_all


def _running(args=("sleep", "1000"), **over):
    """A started container: (root, id, init's host pid)."""
    root = new_root()
    b = new_bundle(list(args), **over)
    cid = new_id("ex")
    check(coil("create", "--bundle", b, cid, root=root))
    check(coil("start", cid, root=root))
    return root, cid, state(cid, root)["pid"]


def _remove(root, cid):
    check(coil("delete", "--force", cid, root=root))


def _status_fields(text, keys):
    out = {}
    for line in text.splitlines():
        k, _, v = line.partition(":")
        if k in keys:
            out[k] = v.split()
    return out


def _container_pids(root, cid):
    r = check(coil("ps", "--format", "json", cid, root=root))
    return sorted(json.loads(r.stdout))


def _one_line_error(r, *words):
    assert r.returncode == 255, describe(r)
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1, describe(r)
    for w in words:
        assert w in lines[0], describe(r)


STATUS_KEYS = ("Uid", "Gid", "Groups", "CapInh", "CapPrm", "CapEff", "CapBnd",
               "CapAmb", "NoNewPrivs", "Seccomp")


def test_exec_output_and_exit_code():
    root, cid, _ = _running()
    r = coil("exec", cid, "sh", "-c", "echo hello-exec; echo err >&2; exit 3",
             root=root)
    assert r.returncode == 3, describe(r)
    assert r.stdout == "hello-exec\n", describe(r)
    assert r.stderr == "err\n", describe(r)
    # what follows the ID is the process's, --help included
    r = check(coil("exec", cid, "echo", "--help", "-t", root=root))
    assert r.stdout == "--help -t\n", describe(r)
    r = check(coil("exec", cid, "--", "echo", "x", root=root))
    assert r.stdout == "x\n", describe(r)
    _remove(root, cid)


def test_exec_exit_code_of_a_signal():
    root, cid, _ = _running()
    r = coil("exec", cid, "sh", "-c", "kill -TERM $$", root=root)
    assert r.returncode == 128 + signal.SIGTERM, describe(r)
    r = coil("exec", cid, "sh", "-c", "kill -KILL $$", root=root)
    assert r.returncode == 128 + signal.SIGKILL, describe(r)
    _remove(root, cid)


def test_exec_forwards_signals():
    root, cid, _ = _running()
    p = popen("exec", cid, "sh", "-c",
              "trap 'echo got-term; exit 7' TERM; echo ready; "
              "while :; do sleep 0.05; done", root=root)
    assert p.stdout.readline() == "ready\n"
    p.send_signal(signal.SIGTERM)
    out, err = p.communicate(timeout=20)
    assert p.returncode == 7, (p.returncode, out, err)
    assert "got-term" in out, (out, err)
    _remove(root, cid)


def test_exec_takes_the_config_process():
    """Without flags the process is init's: ids, capabilities, no_new_privs,
    seccomp mode, rlimits, env and cwd."""
    root, cid, pid = _running(process={"cwd": "/tmp", "env": [
        "PATH=/bin:/sbin:/usr/bin", "FROM_CONFIG=yes"],
        "user": {"uid": 1000, "gid": 1000, "additionalGids": [100]},
        "rlimits": [{"type": "RLIMIT_NOFILE", "hard": 512, "soft": 256}]})
    r = check(coil("exec", cid, "sh", "-c",
                   "cat /proc/self/status; echo; cat /proc/self/limits; "
                   "echo; echo cwd=$(pwd) env=$FROM_CONFIG home=$HOME",
                   root=root))
    with open("/proc/%d/status" % pid) as f:
        want = _status_fields(f.read(), STATUS_KEYS)
    got = _status_fields(r.stdout, STATUS_KEYS)
    # Uid/Gid as seen in the container; init's from the host are mapped
    assert got["Uid"] == ["1000"] * 4 and got["Gid"] == ["1000"] * 4, got
    assert got["Groups"] == ["100"], got
    for k in ("CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb", "NoNewPrivs",
              "Seccomp"):
        assert got[k] == want[k], (k, got, want)
    assert "Max open files            256                  512" in r.stdout, \
        r.stdout
    assert "cwd=/tmp env=yes home=/home/user" in r.stdout, r.stdout
    _remove(root, cid)


def test_exec_flags_change_the_process():
    root, cid, _ = _running(process={"noNewPrivileges": False,
                                     "env": ["PATH=/bin:/sbin:/usr/bin",
                                             "KEEP=1", "OVER=old"]})
    r = check(coil("exec", "--cwd", "/etc", "-e", "OVER=new", "--env", "ADD=2",
                   "-u", "1000:1000", "-g", "10", "--additional-gids", "100",
                   "--cap", "CAP_SYS_ADMIN", "-c", "cap_net_admin",
                   "--no-new-privs", cid, "sh", "-c",
                   "cat /proc/self/status; echo cwd=$(pwd) $KEEP $OVER $ADD",
                   root=root))
    got = _status_fields(r.stdout, STATUS_KEYS)
    assert got["Uid"] == ["1000"] * 4 and got["Gid"] == ["1000"] * 4, got
    assert sorted(got["Groups"]) == ["10", "100"], got
    added = cap_mask(harness.DEFAULT_CAPS + ["CAP_SYS_ADMIN", "CAP_NET_ADMIN"])
    assert int(got["CapBnd"][0], 16) == added, got
    # a non-root uid keeps effective/permitted only through ambient: none
    assert int(got["CapEff"][0], 16) == 0, got
    assert got["NoNewPrivs"] == ["1"], got
    assert "cwd=/etc 1 new 2" in r.stdout, r.stdout
    # as root the added capabilities are effective
    r = check(coil("exec", "--cap", "CAP_SYS_ADMIN", cid, "grep", "CapEff",
                   "/proc/self/status", root=root))
    assert int(r.stdout.split()[1], 16) == cap_mask(
        harness.DEFAULT_CAPS + ["CAP_SYS_ADMIN"]), r.stdout
    _remove(root, cid)


def test_exec_applies_the_container_seccomp_profile():
    seccomp = {"defaultAction": "SCMP_ACT_ALLOW",
               "syscalls": [{"names": ["mkdir", "mkdirat"],
                             "action": "SCMP_ACT_ERRNO"}]}
    root, cid, _ = _running(linux={"seccomp": seccomp})
    r = coil("exec", cid, "mkdir", "/tmp/denied", root=root)
    assert r.returncode != 0, describe(r)
    assert "Operation not permitted" in r.stderr, describe(r)
    r = check(coil("exec", cid, "grep", "Seccomp:", "/proc/self/status",
                   root=root))
    assert r.stdout.split() == ["Seccomp:", "2"], r.stdout
    # what the profile allows still works
    check(coil("exec", cid, "touch", "/tmp/allowed", root=root))
    _remove(root, cid)


def test_exec_joins_every_namespace_of_init():
    root, cid, pid = _running()
    kinds = ("pid", "mnt", "net", "ipc", "uts", "user", "cgroup")
    r = check(coil("exec", cid, "sh", "-c",
                   "for n in %s; do readlink /proc/self/ns/$n; done; "
                   "hostname" % " ".join(kinds), root=root))
    want = [os.readlink("/proc/%d/ns/%s" % (pid, k)) for k in kinds]
    got = r.stdout.split()
    assert got[:-1] == want, (got, want)
    assert all(w != harness.host_ns(k) for w, k in zip(want, kinds)), want
    assert got[-1] == "coil-test", got
    # init's pid namespace: init is its pid 1
    r = check(coil("exec", cid, "cat", "/proc/1/cmdline", root=root))
    assert r.stdout.split("\0")[:2] == ["sleep", "1000"], r.stdout
    _remove(root, cid)


def test_exec_joins_init_cgroups_on_every_hierarchy():
    root, cid, pid = _running()
    pidfile = os.path.join(tmpdir(), "exec.pid")
    check(coil("exec", "--detach", "--pid-file", pidfile, cid, "sleep", "1000",
               root=root))
    with open(pidfile) as f:
        epid = int(f.read())
    with open("/proc/%d/cgroup" % pid) as f:
        want = sorted(f.read().splitlines())
    with open("/proc/%d/cgroup" % epid) as f:
        got = sorted(f.read().splitlines())
    with open("/proc/self/cgroup") as f:
        ours = sorted(f.read().splitlines())
    assert got == want, (got, want)
    assert got != ours, "not moved out of the caller's cgroups"
    assert epid in _container_pids(root, cid)
    _remove(root, cid)


def test_exec_detach_writes_pid_file():
    root, cid, pid = _running()
    d = tmpdir()
    pidfile = os.path.join(d, "exec.pid")
    r = check(coil("exec", "-d", "--pid-file", pidfile, cid, "sleep", "1001",
                   root=root))
    assert r.stdout == "" and r.stderr == "", describe(r)
    with open(pidfile) as f:
        epid = int(f.read())
    with open("/proc/%d/cmdline" % epid) as f:
        assert f.read().split("\0")[:2] == ["sleep", "1001"]
    assert os.readlink("/proc/%d/ns/pid" % epid) == \
        os.readlink("/proc/%d/ns/pid" % pid)
    # nothing but the pid file beside it
    assert os.listdir(d) == ["exec.pid"], os.listdir(d)
    _remove(root, cid)
    assert not os.path.exists("/proc/%d/cmdline" % epid) or \
        open("/proc/%d/cmdline" % epid).read() == ""


def test_exec_preserve_fds():
    root, cid, _ = _running()
    r3, w3 = os.pipe()
    r4, w4 = os.pipe()
    extra = os.open("/dev/null", os.O_RDONLY)
    try:
        # Moved to 3 and 4 in the child; fd 5 (/dev/null) is not passed.
        def place():
            os.dup2(w3, 3)
            os.dup2(w4, 4)
            os.dup2(extra, 5)
        p = subprocess.run(
            [harness.COIL, "--root", root, "exec", "--preserve-fds", "2", cid,
             "sh", "-c", "echo via3 >&3; echo via4 >&4; ls /proc/self/fd"],
            capture_output=True, text=True, timeout=60,
            stdin=subprocess.DEVNULL, preexec_fn=place, pass_fds=(3, 4, 5))
        os.close(w3)
        os.close(w4)
        assert p.returncode == 0, describe(p)
        assert os.read(r3, 100) == b"via3\n"
        assert os.read(r4, 100) == b"via4\n"
        # 0-2, the two passed, and ls's own directory fd (the lowest free)
        fds = sorted(int(x) for x in p.stdout.split())
        assert fds == [0, 1, 2, 3, 4, 5], p.stdout
    finally:
        for fd in (r3, r4, extra):
            os.close(fd)
    _remove(root, cid)


def test_exec_tty_through_console_socket():
    root, cid, _ = _running()
    sockpath = os.path.join(tmpdir(), "console.sock")
    srv = ConsoleServer(sockpath)
    try:
        p = popen("exec", "--tty", "--console-socket", sockpath, cid, "sh",
                  "-c", "tty; [ -t 0 ] && [ -t 1 ] && [ -t 2 ] && "
                  "echo all-tty; exit 6", root=root)
        fd = srv.master()
        assert os.isatty(fd)
        out = read_all(fd)
        p.wait(timeout=20)
        assert p.returncode == 6, (p.returncode, p.stderr.read())
    finally:
        srv.close()
    assert "/dev/pts/" in out and "all-tty" in out, repr(out)
    # a terminal needs the socket, and the socket a terminal
    r = coil("exec", "-t", cid, "true", root=root)
    _one_line_error(r, "--console-socket")
    r = coil("exec", "--console-socket", sockpath, cid, "true", root=root)
    _one_line_error(r, "--console-socket")
    _remove(root, cid)


def test_exec_process_file():
    root, cid, pid = _running()
    proc = {"args": ["sh", "-c", "id -u; id -g; pwd; echo $V; "
                     "grep -E 'CapBnd|NoNewPrivs' /proc/self/status"],
            "cwd": "/tmp", "env": ["PATH=/bin", "V=from-file"],
            "user": {"uid": 1000, "gid": 1000}, "terminal": False}
    path = os.path.join(tmpdir(), "process.json")
    with open(path, "w") as f:
        json.dump(proc, f)
    r = check(coil("exec", "--process", path, cid, root=root))
    lines = r.stdout.splitlines()
    assert lines[:4] == ["1000", "1000", "/tmp", "from-file"], r.stdout
    # capabilities the file leaves out are the config's (as runc); its
    # noNewPrivileges is its own
    with open("/proc/%d/status" % pid) as f:
        bnd = _status_fields(f.read(), ("CapBnd",))["CapBnd"]
    got = _status_fields(r.stdout, ("CapBnd", "NoNewPrivs"))
    assert got["CapBnd"] == bnd and got["NoNewPrivs"] == ["0"], got
    _remove(root, cid)


def test_exec_process_file_errors_name_the_field():
    root, cid, _ = _running()
    d = tmpdir()
    before = _container_pids(root, cid)
    cases = [('{"args": ["true"]', "invalid JSON"),
             ('{"args": ["true"]}', "process.cwd"),
             ('{"args": ["true"], "cwd": "tmp"}', "process.cwd"),
             ('{"cwd": "/"}', "process.args"),
             ('{"args": [], "cwd": "/"}', "process.args"),
             ('{"args": ["true"], "cwd": "/", "user": {"uid": "x", "gid": 0}}',
              "process.user.uid"),
             ('{"args": ["true"], "cwd": "/", "rlimits": '
              '[{"type": "RLIMIT_BOGUS", "hard": 1, "soft": 1}]}',
              "process.rlimits[0].type")]
    for i, (text, word) in enumerate(cases):
        path = os.path.join(d, "p%d.json" % i)
        with open(path, "w") as f:
            f.write(text)
        r = coil("exec", "--process", path, cid, root=root)
        _one_line_error(r, word)
    r = coil("exec", "--process", os.path.join(d, "missing.json"), cid,
             root=root)
    _one_line_error(r, "--process")
    assert _container_pids(root, cid) == before
    _remove(root, cid)


def test_exec_bad_input_leaves_nothing():
    root, cid, _ = _running()
    d = tmpdir()
    pidfile = os.path.join(d, "exec.pid")
    before = _container_pids(root, cid)
    for flags, word in ((["-u", "abc"], "--user"),
                        (["-u", "1:x"], "--user"),
                        (["-u", "4294967295"], "--user"),
                        (["-g", "-5"], "--additional-gids"),
                        (["--cap", "CAP_BOGUS"], "CAP_BOGUS"),
                        (["-e", "NOEQUALS"], "--env"),
                        (["-e", "=v"], "--env"),
                        (["--cwd", "relative"], "--cwd")):
        r = coil("exec", "-d", "--pid-file", pidfile, *flags, cid, "true",
                 root=root)
        _one_line_error(r, word)
    r = coil("exec", "--pid-file", pidfile, "../bad", "true", root=root)
    assert r.returncode == 255 and len(r.stderr.splitlines()) == 1, describe(r)
    r = coil("exec", "--pid-file", pidfile, "no-such-ct", "true", root=root)
    _one_line_error(r, "no-such-ct")
    # usage errors: exit 1, as runc's
    for args in (["--preserve-fds", "x", cid, "true"], ["--bogus", cid, "true"],
                 [cid], []):
        r = coil("exec", *args, root=root)
        assert r.returncode == 1, describe(r)
        assert len(r.stderr.splitlines()) == 1, describe(r)
    assert os.listdir(d) == []
    assert _container_pids(root, cid) == before
    _remove(root, cid)


def test_exec_unrunnable_programs_use_runc_words():
    root, cid, _ = _running()
    for args, words in ((["no-such-cmd"],
                         ['exec: "no-such-cmd": executable file not found in '
                          '$PATH']),
                        (["/nonexistent"], ["no such file or directory"]),
                        (["/etc/passwd"], ["permission denied"])):
        r = coil("exec", cid, *args, root=root)
        _one_line_error(r, *words)
    _remove(root, cid)


def test_exec_needs_a_running_container():
    root = new_root()
    b = new_bundle(["sleep", "1000"])
    cid = new_id("ex")
    check(coil("create", "--bundle", b, cid, root=root))
    _one_line_error(coil("exec", cid, "true", root=root), "created")
    check(coil("start", cid, root=root))
    check(coil("pause", cid, root=root))
    _one_line_error(coil("exec", cid, "true", root=root), "paused",
                    "--ignore-paused")
    # --ignore-paused: the process joins the frozen cgroup and runs once
    # the container resumes
    p = popen("exec", "--ignore-paused", cid, "echo", "after-resume",
              root=root)
    check(coil("resume", cid, root=root))
    out, err = p.communicate(timeout=30)
    assert p.returncode == 0 and out == "after-resume\n", (out, err)
    check(coil("kill", cid, "KILL", root=root))
    wait_status(cid, root, "stopped")
    _one_line_error(coil("exec", cid, "true", root=root), "stopped")
    check(coil("delete", cid, root=root))


def test_exec_into_a_stopped_container_fails():
    root = new_root()
    b = new_bundle(["true"])
    cid = new_id("ex")
    check(coil("create", "--bundle", b, cid, root=root))
    check(coil("start", cid, root=root))
    wait_status(cid, root, "stopped")
    pidfile = os.path.join(tmpdir(), "p")
    r = coil("exec", "--pid-file", pidfile, cid, "true", root=root)
    _one_line_error(r, "cannot exec in a stopped container")
    assert not os.path.exists(pidfile)
    check(coil("delete", cid, root=root))


def test_exec_refuses_a_python_sandbox_container():
    bundle_dir = os.path.join(harness.REPO, "bundles", "python")
    cfg = harness.read_config(bundle_dir)
    cfg["root"]["path"] = os.path.join(bundle_dir, "rootfs")
    b = tmpdir()
    harness.write_config(b, cfg)
    for name in os.listdir(bundle_dir):
        if name not in ("config.json", "rootfs"):
            os.symlink(os.path.join(bundle_dir, name), os.path.join(b, name))
    root = new_root()
    cid = new_id("py")
    check(coil("create", "--bundle", b, cid, root=root))
    r = coil("exec", cid, "true", root=root)
    _one_line_error(r, "exec: container %s runs in Python sandbox mode; exec "
                    "is not supported" % cid)
    check(coil("delete", "--force", cid, root=root))


# The attacker, in the container's pid namespace and without a user
# namespace, scans /proc without pause for a process named coil (an exec'd
# process before its execve). With "open" it opens that exe read-only,
# tries to write it and, once told the exec is over (the host binary no
# longer busy), tries again through the read-only handle. With "watch" it
# only tries to read the exe link, over and over until the process execs,
# and counts the processes it saw.
ATTACKER_C = r"""
#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void put(const char *name, const char *text) {
  char path[64];
  snprintf(path, sizeof path, "/shared/%s", name);
  FILE *f = fopen(path, "w");
  if (f) { fputs(text, f); fclose(f); }
}

static const char *try_write(const char *path) {
  int w = open(path, O_WRONLY | O_APPEND);
  if (w < 0) return "open-failed";
  const char *r = write(w, "PWNED", 5) == 5 ? "written" : "write-failed";
  close(w);
  return r;
}

/* As init of the pid namespace it must outlive the exec it caught. */
static int finish(void) {
  while (access("/shared/stop", F_OK) != 0) usleep(10000);
  return 0;
}

static int is_coil(const char *pid) {
  char path[64], comm[32] = "";
  snprintf(path, sizeof path, "/proc/%s/comm", pid);
  int fd = open(path, O_RDONLY);
  if (fd < 0) return 0;
  ssize_t n = read(fd, comm, sizeof comm - 1);
  close(fd);
  return n == 5 && !memcmp(comm, "coil\n", 5);
}

static int open_exe(const char *exe) {
  char link[256];
  ssize_t n = readlink(exe, link, sizeof link - 1);
  int fd = open(exe, O_RDONLY);
  if (n <= 0 || fd < 0) return 0;
  link[n] = 0;
  put("link", link);
  put("w1", try_write(exe));
  put("caught", "");
  while (access("/shared/gone", F_OK) != 0) usleep(10000);
  char again[64];
  snprintf(again, sizeof again, "/proc/self/fd/%d", fd);
  put("w2", try_write(again));
  put("done", "");
  return 1;
}

static int watch_exe(const char *pid, const char *exe, int *seen) {
  char link[256], count[16];
  do {
    ssize_t n = readlink(exe, link, sizeof link - 1);
    if (n > 0) {
      link[n] = 0;
      /* the new exe goes in before the new name: exec'd already */
      if (strstr(link, "busybox"))
        break;
      put("link", link);
      return 1;
    }
  } while (is_coil(pid));
  snprintf(count, sizeof count, "%d", ++*seen);
  put("seen", count);
  return 0;
}

int main(int argc, char **argv) {
  int watch = argc > 1 && !strcmp(argv[1], "watch"), seen = 0;
  for (;;) {
    if (access("/shared/stop", F_OK) == 0) return 0;
    DIR *d = opendir("/proc");
    struct dirent *e;
    while (d && (e = readdir(d))) {
      if (e->d_name[0] < '1' || e->d_name[0] > '9' || !is_coil(e->d_name))
        continue;
      char exe[64];
      snprintf(exe, sizeof exe, "/proc/%s/exe", e->d_name);
      if (watch ? watch_exe(e->d_name, exe, &seen) : open_exe(exe))
        return finish();
    }
    if (d) closedir(d);
  }
}
"""


def _attack_exec(ptrace):
    """Runs the attacker as a container's init (with CAP_SYS_PTRACE: "open",
    else "watch") and execs into that container from a copy of coil, until
    it opened an exec'd process's exe, or 30 times when watching (bounded:
    the setup is a window of hundreds of microseconds against a scan of a
    few dozen). Returns what it got; the copy must be unchanged."""
    from test_exe import _binary_copy, _read, _run_copy, _sha256
    copy, digest = _binary_copy()
    shared = tmpdir(0o777)
    src = os.path.join(shared, "attack.c")
    with open(src, "w") as f:
        f.write(ATTACKER_C)
    subprocess.run(["cc", "-static", "-O2", "-o",
                    os.path.join(shared, "attack"), src], check=True)
    caps = harness.DEFAULT_CAPS + (["CAP_SYS_PTRACE"] if ptrace else [])
    nss = [{"type": t} for t in harness.NAMESPACES if t != "user"]
    mounts = base_config([])["mounts"] + [
        {"destination": "/shared", "type": "bind", "source": shared,
         "options": ["rbind", "rw"]}]
    root, cid, _ = _running(
        ["/shared/attack", "open" if ptrace else "watch"], mounts=mounts,
        linux={"namespaces": nss, "uidMappings": None, "gidMappings": None},
        process={"noNewPrivileges": False, "capabilities": {
            k: caps for k in ("bounding", "effective", "permitted")}})
    for _ in range(200 if ptrace else 30):
        check(_run_copy(copy, root, "exec", cid, "true"))
        if os.path.exists(os.path.join(shared, "caught" if ptrace else "link")):
            break
    open(os.path.join(shared, "stop"), "w").close()
    caught = any(os.path.exists(os.path.join(shared, f))
                 for f in (("caught",) if ptrace else ("seen", "link")))
    if caught and ptrace:
        open(os.path.join(shared, "gone"), "w").close()
        deadline = time.time() + 20
        while not os.path.exists(os.path.join(shared, "done")):
            assert time.time() < deadline, "attacker did not finish"
            time.sleep(0.02)
    got = {k: _read(os.path.join(shared, k))
           for k in ("link", "w1", "w2", "seen")}
    got["copy"] = copy
    _remove(root, cid)
    assert _sha256(copy) == digest, "the host binary was rewritten: %r" % got
    assert caught, "the attacker never saw an exec'd process before execve"
    return got


def test_exec_cannot_rewrite_host_binary_through_proc_exe():
    # With CAP_SYS_PTRACE (a debugging sidecar) the exe can be opened: it
    # is the detached read-only mount of coil (or the sealed copy), which
    # cannot be written, never the host's path.
    got = _attack_exec(ptrace=True)
    assert got["w1"] != "written" and got["w2"] != "written", got
    assert got["link"] and got["link"] != got["copy"], got


def test_exec_process_is_not_dumpable_before_execve():
    # Without it, the same root cannot even read where the exe points: not
    # while the process holds more capabilities, nor once it dropped them.
    got = _attack_exec(ptrace=False)
    assert got["link"] is None, got
