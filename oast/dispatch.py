"""Runs one tenant handler for one query or hit: admission, the per-key
state lock, a slot, the backend call under a deadline, the strict check of
its result, and the state it returns. Any failure is one log line and
None, so the caller answers with its safe default."""

import asyncio
import json
import sys
import time

from oast import answers
from oast.config import find_zone, zone_index
from oast.tenants import Busy, Tenant

# The backend enforces timeout_ms itself and returns after it; this is only
# the listener's backstop for a backend that does not.
BACKSTOP_S = 3.0

# What one read of a listener's socket asks for. asyncio's default, 256 KiB,
# is above malloc's mmap threshold: every datagram and every TCP read would
# map a buffer, shrink it and unmap it again. No UDP datagram is larger.
READ_MAX = 65535


def small_reads(transport):
    """Reads of transport's socket ask for READ_MAX bytes at a time (under
    uvloop, which reads into its own 64 KiB buffer, there is nothing to
    set)."""
    if hasattr(transport, "max_size"):
        transport.max_size = READ_MAX


class Core:
    def __init__(self, cfg, backend):
        self.cfg = cfg
        self.backend = backend
        self.tenants = {n: Tenant(t) for n, t in cfg["tenants"].items()}
        self.index = zone_index(cfg)
        self.tasks = set()    # backend calls
        self.serving = set()  # queries and hits being answered
        self.stats = {"calls": 0, "failures": 0}

    def zone_for(self, name):
        return find_zone(self.index, name)

    def spawn(self, coro):
        """Runs one query's or hit's coroutine; a bug in it is logged, not
        lost, and the listener keeps serving."""
        task = asyncio.ensure_future(coro)
        self.serving.add(task)
        task.add_done_callback(self._served)
        return task

    def _served(self, task):
        self.serving.discard(task)
        if not task.cancelled() and task.exception() is not None:
            e = task.exception()
            sys.stderr.write("oast: internal error: %s: %s\n" %
                             (type(e).__name__, e))

    async def start(self):
        await self.backend.start(self.tenants)

    async def close(self):
        for task in list(self.serving):
            task.cancel()
        await asyncio.gather(*self.serving, return_exceptions=True)
        await self.backend.close()
        if self.tasks:
            await asyncio.gather(*self.tasks, return_exceptions=True)

    async def run(self, tenant, handler, request, key, check, what):
        """check(result) -> the parsed answer, or raises AnswerError.
        Returns the parsed answer or None (the caller's default answer)."""
        t = self.tenants[tenant]
        self.stats["calls"] += 1
        if handler in t.rejected:
            return self._fail(t, what, handler, "rejected by the gate: " +
                              t.rejected[handler])
        try:
            t.admit()
        except Busy as e:
            return self._fail(t, what, handler, "Busy: %s" % e)
        arrived = time.monotonic()
        task = None
        ent = None
        try:
            ent = await t.key_lock(key, t.limits["queue_ms"] / 1000.0)
            waited = time.monotonic() - arrived
            await t.slot(max(0.0, t.limits["queue_ms"] / 1000.0 - waited))
            req = dict(request)
            stored = t.state.get(key)
            req["state"] = json.loads(stored) if stored is not None else None
            task = asyncio.ensure_future(
                self.backend.call(t, handler, req, t.limits))
            self.tasks.add(task)
            task.add_done_callback(lambda f, t=t: self._done(f, t))
            done, _ = await asyncio.wait(
                {task}, timeout=t.limits["timeout_ms"] / 1000.0 + BACKSTOP_S)
            if not done:
                return self._fail(t, what, handler, "Timeout: the backend did "
                                  "not return (its slot stays taken until it "
                                  "does)")
            env = task.result()
            if not isinstance(env, dict) or not env.get("ok"):
                e = env.get("error") if isinstance(env, dict) else None
                e = e if isinstance(e, dict) else {}
                return self._fail(t, what, handler, "%s: %s" % (
                    e.get("type", "Error"), e.get("message", "no envelope")))
            result = env.get("result")
            try:
                parsed = check(result)
                state = answers.check_state(result, t.limits["state_bytes_max"])
            except answers.AnswerError as e:
                return self._fail(t, what, handler, "bad result: %s" % e)
            if state is not None:
                t.state.put(key, state)
            return parsed
        except Busy as e:
            return self._fail(t, what, handler, "Busy: %s" % e)
        finally:
            if ent is not None:
                t.key_unlock(key, ent)
            if task is None:
                t.release()

    def _done(self, fut, t):
        """The backend call ended: its slot and admission are free again
        (possibly after the caller already answered with the default)."""
        self.tasks.discard(fut)
        t.slot_done()
        t.release()
        if not fut.cancelled():
            fut.exception()

    def _fail(self, t, what, handler, why):
        self.stats["failures"] += 1
        t.log("oast: tenant %s: %s: handler %s: %s" % (t.name, what, handler,
                                                       why))
        return None
