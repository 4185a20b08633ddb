/* Deadlines on CLOCK_MONOTONIC in 64-bit milliseconds, and the poll(2)
 * timeouts (an int of milliseconds) that approach them in bounded slices, so
 * a timeout of any size neither wraps nor blocks past its deadline. */
#ifndef COIL_DEADLINE_H
#define COIL_DEADLINE_H

#define DEADLINE_NONE (-1LL)

long long deadline_now_ms(void);

/* now_ms + ms, saturating; ms <= 0 means no deadline (DEADLINE_NONE). */
long long deadline_after_ms(long long now_ms, long long ms);

/* The poll timeout for one wait toward deadline: 0 once it has passed, else
 * the time left capped at cap_ms (when cap_ms >= 0) and at INT_MAX. Without a
 * deadline it is cap_ms, so -1 (block) only when neither bounds the wait. */
int deadline_slice_ms(long long deadline, long long now_ms, int cap_ms);

#endif
