"""How a handler runs. Both backends take (tenant, handler, request) and
give back coil's envelope ({"ok": true, "result": ...} or {"ok": false,
"error": {"type": ..., "message": ...}}); both return only once the run has
ended and its resources are free, so a tenant's slot is never handed on
while its last sandbox still burns CPU.

- serve: a warm `coil serve` over its unix socket (the fast path).
- py: one cold `coil py --entry handle FILE` per call, the request on stdin
  (not on the command line: it may carry the tenant's secret, and argv is
  readable by every local user)."""

import asyncio
import concurrent.futures
import json
import os
import signal

from oast import serve_wire

KILL_GRACE_S = 2.0


def error(kind, message):
    return {"ok": False, "error": {"type": kind, "message": message}}


class PyBackend:
    name = "py"

    def __init__(self, cfg):
        self.coil = cfg["coil"]
        self.root = cfg["coil_root"]
        self.procs = set()

    async def start(self, tenants):
        """Gates every handler once with `coil check`: a rejected one is
        never run, each of its calls gets the default answer."""
        os.makedirs(self.root, mode=0o700, exist_ok=True)
        for t in tenants.values():
            for name, path in t.cfg["handlers"].items():
                p = await asyncio.create_subprocess_exec(
                    self.coil, "check", path, stdin=asyncio.subprocess.DEVNULL,
                    stdout=asyncio.subprocess.PIPE,
                    stderr=asyncio.subprocess.PIPE)
                out, err = await p.communicate()
                if p.returncode != 0:
                    lines = (out + err).decode(errors="replace").splitlines()
                    t.rejected[name] = "GateViolation: " + (
                        lines[0] if lines else "coil check exited %d" %
                        p.returncode)

    async def call(self, tenant, handler, request, limits):
        t = tenant.cfg
        argv = [self.coil, "--root", self.root, "py"]
        if t["bundle"]:
            argv += ["--bundle", t["bundle"]]
        timeout_s = limits["timeout_ms"] / 1000.0
        argv += ["--entry", "handle",
                 "--timeout", str(max(1, -(-limits["timeout_ms"] // 1000))),
                 "--memory", "%dm" % limits["memory_mb"],
                 t["handlers"][handler]]
        data = json.dumps(request, separators=(",", ":")).encode()
        try:
            p = await asyncio.create_subprocess_exec(
                *argv, stdin=asyncio.subprocess.PIPE,
                stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
        except OSError as e:
            return error("BackendError", "%s: %s" % (self.coil, e.strerror))
        self.procs.add(p)
        try:
            try:
                out, err = await asyncio.wait_for(p.communicate(data), timeout_s)
            except asyncio.TimeoutError:
                await self._stop(p)
                return error("Timeout", "no answer within %d ms" %
                             limits["timeout_ms"])
            except asyncio.CancelledError:
                await asyncio.shield(self._stop(p))
                raise
        finally:
            self.procs.discard(p)
        lines = out.decode("utf-8", errors="replace").strip().splitlines()
        try:
            env = json.loads(lines[-1])
            if isinstance(env, dict) and "ok" in env:
                return env
        except (ValueError, IndexError):
            pass
        why = err.decode(errors="replace").strip().splitlines()
        return error("BackendError", "coil py exited %s%s" % (
            p.returncode, ": " + why[-1] if why else ""))

    async def _stop(self, p):
        """SIGTERM: coil forwards it and ends the sandbox at once (and
        removes its container); SIGKILL only if coil itself hangs."""
        if p.returncode is None:
            try:
                p.send_signal(signal.SIGTERM)
            except ProcessLookupError:
                pass
        try:
            await asyncio.wait_for(p.wait(), KILL_GRACE_S)
        except asyncio.TimeoutError:
            try:
                p.kill()
            except ProcessLookupError:
                pass
            await p.wait()

    async def close(self):
        await asyncio.gather(*(self._stop(p) for p in list(self.procs)))


class ServeBackend:
    """Calls a running `coil serve`: handlers are registered once at start
    (the server gates them), each call is one frame on a pooled connection.
    The blocking client runs in threads, at most the tenant's max_inflight
    at a time (the caller holds a slot)."""

    name = "serve"

    def __init__(self, cfg):
        self.socket = cfg["serve_socket"]
        self.client_cls, self.transport_errors = serve_wire.client_class()
        self.idle = {}
        self.pool = None

    def _client(self, tenant, timeout):
        """An idle connection of the tenant's (their timeout is the
        tenant's, fixed), or a new one."""
        idle = self.idle.setdefault(tenant, [])
        if idle:
            return idle.pop()
        return self.client_cls(self.socket, tenant=tenant, timeout=timeout)

    def _register(self, tenant, name, path):
        with open(path, encoding="utf-8") as f:
            code = f.read()
        c = self.client_cls(self.socket, tenant=tenant, timeout=10.0)
        try:
            env = c.register(name, code, tenant=tenant)
        finally:
            c.close()
        return env

    async def start(self, tenants):
        workers = sum(t.limits["max_inflight"] for t in tenants.values()) + 1
        self.pool = concurrent.futures.ThreadPoolExecutor(
            max_workers=workers, thread_name_prefix="oast-serve")
        loop = asyncio.get_running_loop()
        for t in tenants.values():
            for name, path in t.cfg["handlers"].items():
                try:
                    env = await loop.run_in_executor(
                        self.pool, self._register, t.name, name, path)
                except self.transport_errors as e:
                    raise RuntimeError("coil serve at %s: %s" % (self.socket, e))
                if not env.get("ok"):
                    e = env.get("error") or {}
                    t.rejected[name] = "%s: %s" % (e.get("type"), e.get("message"))

    def _call(self, tenant, handler, path, request, limits):
        lim = {"timeout_ms": limits["timeout_ms"],
               "memory_mb": limits["memory_mb"]}
        c = self._client(tenant, limits["timeout_ms"] / 1000.0 + KILL_GRACE_S)
        try:
            env = c.call(handler=handler, request=request, limits=lim,
                         tenant=tenant)
            if (env.get("error") or {}).get("type") == "UnknownHandler":
                # The server restarted and forgot it: register again, once.
                with open(path, encoding="utf-8") as f:
                    reg = c.register(handler, f.read(), tenant=tenant)
                if reg.get("ok"):
                    env = c.call(handler=handler, request=request, limits=lim,
                                 tenant=tenant)
        except self.transport_errors as e:
            c.close()
            return error("BackendError", "coil serve: %s" % e)
        self.idle.setdefault(tenant, []).append(c)
        return env

    async def call(self, tenant, handler, request, limits):
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(
            self.pool, self._call, tenant.name, handler,
            tenant.cfg["handlers"][handler], request, limits)

    async def close(self):
        if self.pool:
            self.pool.shutdown(wait=True)
        for clients in self.idle.values():
            for c in clients:
                c.close()


def make(cfg):
    return {"py": PyBackend, "serve": ServeBackend}[cfg["backend"]](cfg)
