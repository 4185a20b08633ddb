"""Per-tenant runtime: the bounded admission that keeps one tenant from
starving the others, the state store handlers read and write through the
request, and rate-limited failure logging."""

import asyncio
import collections
import sys
import time


class Busy(Exception):
    """The tenant's in-flight slots and queue are full, or a queued call
    waited longer than queue_ms."""


class StateStore:
    """JSON texts by key, least recently used dropped past keys_max. Kept
    by the listener, never in a sandbox: a handler only sees its key's value
    in the request and returns the next one."""

    def __init__(self, keys_max):
        self.keys_max = keys_max
        self.items = collections.OrderedDict()

    def get(self, key):
        text = self.items.get(key)
        if text is not None:
            self.items.move_to_end(key)
        return text

    def put(self, key, text):
        self.items[key] = text
        self.items.move_to_end(key)
        while len(self.items) > self.keys_max:
            self.items.popitem(last=False)


class Tenant:
    def __init__(self, cfg):
        self.cfg = cfg
        self.name = cfg["name"]
        self.limits = cfg["limits"]
        self.running = 0       # calls holding a slot
        self.waiters = collections.deque()  # futures of calls waiting for one
        self.pending = 0     # calls admitted: running or waiting for a slot
        self.key_locks = {}  # state key -> [lock, users]
        self.state = StateStore(self.limits["state_keys_max"])
        self.log_window = 0
        self.log_count = 0
        self.log_dropped = 0
        self.rejected = {}   # handler name -> why it never runs

    def admit(self):
        """Counts a call in, or raises Busy when running + queued calls
        already fill max_inflight + max_queue."""
        if self.pending >= self.limits["max_inflight"] + self.limits["max_queue"]:
            raise Busy("%d calls in flight or queued" % self.pending)
        self.pending += 1

    def release(self):
        self.pending -= 1

    async def key_lock(self, key, wait_s):
        """Calls sharing a state key run one after the other, so each sees
        the state the previous one returned; one waits at most wait_s."""
        ent = self.key_locks.get(key)
        if ent is None:
            ent = self.key_locks[key] = [asyncio.Lock(), 0]
        ent[1] += 1
        if ent[1] == 1:
            # No one holds the key or waits for it: taken at once, without
            # the task and timer a bounded wait costs.
            await ent[0].acquire()
            return ent
        try:
            await asyncio.wait_for(ent[0].acquire(), wait_s)
        except asyncio.TimeoutError:
            self._unuse(key, ent)
            raise Busy("calls for the same key took over %d ms" %
                       self.limits["queue_ms"])
        except BaseException:
            self._unuse(key, ent)
            raise
        return ent

    def key_unlock(self, key, ent):
        ent[0].release()
        self._unuse(key, ent)

    def _unuse(self, key, ent):
        ent[1] -= 1
        if ent[1] == 0 and self.key_locks.get(key) is ent:
            del self.key_locks[key]

    async def slot(self, wait_s):
        """Takes one of the tenant's max_inflight slots, waiting at most
        wait_s in arrival order. Futures rather than a semaphore under
        wait_for: a waiter that gives up is removed here, and a slot granted
        just as its waiter gives up is handed back, never lost."""
        if self.running < self.limits["max_inflight"] and not self.waiters:
            self.running += 1
            return
        fut = asyncio.get_running_loop().create_future()
        self.waiters.append(fut)
        try:
            await asyncio.wait({fut}, timeout=wait_s)
        except BaseException:
            if fut.done():
                self.slot_done()  # granted as the caller was cancelled
            else:
                fut.cancel()
                self.waiters.remove(fut)
            raise
        if not fut.done():
            fut.cancel()
            self.waiters.remove(fut)
            raise Busy("no free slot within %d ms" % self.limits["queue_ms"])

    def slot_done(self):
        """Hands the slot to the first waiter, or frees it."""
        while self.waiters:
            fut = self.waiters.popleft()
            if not fut.done():
                fut.set_result(None)
                return
        self.running -= 1

    def log(self, line):
        """One line per failure, at most log_per_s a second per tenant: a
        hostile tenant must not flood the operator's log either."""
        now = int(time.monotonic())
        if now != self.log_window:
            if self.log_dropped:
                _emit("oast: tenant %s: %d more failure lines suppressed" %
                      (self.name, self.log_dropped))
            self.log_window, self.log_count, self.log_dropped = now, 0, 0
        if self.log_count >= self.limits["log_per_s"]:
            self.log_dropped += 1
            return
        self.log_count += 1
        _emit(line)


def _emit(line):
    sys.stderr.write(line + "\n")
    sys.stderr.flush()
