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
    (the server gates them), each call is one frame on a pooled connection
    of the tenant's, on the event loop itself (coil_client.AsyncClient: no
    thread hand-offs). The caller holds one of the tenant's max_inflight
    slots, which bounds the connections in use."""

    name = "serve"

    def __init__(self, cfg):
        self.socket = cfg["serve_socket"]
        self.client_cls, self.transport_errors = serve_wire.client_class()
        self.idle = {}

    def _client(self, tenant, timeout):
        """An idle connection of the tenant's (their timeout is the
        tenant's, fixed), or a new one."""
        idle = self.idle.setdefault(tenant, [])
        if idle:
            return idle.pop()
        return self.client_cls(self.socket, tenant=tenant, timeout=timeout)

    async def _register(self, tenant, name, path):
        with open(path, encoding="utf-8") as f:
            code = f.read()
        c = self.client_cls(self.socket, tenant=tenant, timeout=10.0)
        try:
            return await c.register(name, code, tenant=tenant)
        finally:
            await c.close()

    async def start(self, tenants):
        for t in tenants.values():
            for name, path in t.cfg["handlers"].items():
                try:
                    env = await self._register(t.name, name, path)
                except self.transport_errors as e:
                    raise RuntimeError("coil serve at %s: %s" % (self.socket, e))
                if not env.get("ok"):
                    e = env.get("error") or {}
                    t.rejected[name] = "%s: %s" % (e.get("type"), e.get("message"))

    async def call(self, tenant, handler, request, limits):
        lim = {"timeout_ms": limits["timeout_ms"],
               "memory_mb": limits["memory_mb"]}
        path = tenant.cfg["handlers"][handler]
        c = self._client(tenant.name,
                         limits["timeout_ms"] / 1000.0 + KILL_GRACE_S)
        try:
            env = await c.call(handler=handler, request=request, limits=lim,
                               tenant=tenant.name)
            if (env.get("error") or {}).get("type") == "UnknownHandler":
                # The server restarted and forgot it: register again, once.
                with open(path, encoding="utf-8") as f:
                    reg = await c.register(handler, f.read(),
                                           tenant=tenant.name)
                if reg.get("ok"):
                    env = await c.call(handler=handler, request=request,
                                       limits=lim, tenant=tenant.name)
        except self.transport_errors as e:
            await c.close()
            return error("BackendError", "coil serve: %s" % e)
        except asyncio.CancelledError:
            # Mid-exchange: the connection's state is unknown.
            await c.close()
            raise
        self.idle.setdefault(tenant.name, []).append(c)
        return env

    async def close(self):
        for clients in self.idle.values():
            for c in clients:
                await c.close()


def make(cfg):
    return {"py": PyBackend, "serve": ServeBackend}[cfg["backend"]](cfg)
