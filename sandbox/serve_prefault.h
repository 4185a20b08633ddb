/* The pages of a serve template that its children write, learned from the
 * first children of each template and copied by every later spare before
 * its job arrives. A copy-on-write fault taken during a request costs a
 * trap, a page copy and a TLB flush; on a virtual machine whose page tables
 * the hypervisor shadows, several times what one copy asked for in bulk
 * (MADV_POPULATE_WRITE) costs, and it is taken on the request's path. Only
 * speed depends on this: a page left out faults as before, one put in
 * needlessly is a page of memory. */
#ifndef COIL_SERVE_PREFAULT_H
#define COIL_SERVE_PREFAULT_H

/* Opens this process's own maps and pagemap through proc_fd (a procfs
 * showing it); -1 when they cannot be read, and nothing is learned. */
int prefault_open(int proc_fd);

/* Adds to the learned pages this process's private writable pages that it
 * maps alone. Called while a child cloned from it is done with its
 * request and still alive, and no process cloned after that child exists:
 * a page the child wrote was copied for it, so the template's own is its
 * alone again, while a page the child only read is still mapped twice.
 * Pages this process wrote itself since are included: a few, and only a
 * page too many. Returns how many pages are known now, or -1 when they
 * could not be read. */
long prefault_learn(void);

/* Closes what prefault_open opened: learning is over. */
void prefault_close(void);

/* Copies every learned page into this process (a spare, right after its
 * clone), in runs; a page no longer mapped is skipped. */
void prefault_apply(void);

#endif
