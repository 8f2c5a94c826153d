/* SPDX-License-Identifier: Apache-2.0 */
/* A number of this process's /proc/self/status ("Threads", "Umask", ...). */
#ifndef SA_PROCSTATUS_H
#define SA_PROCSTATUS_H

/* The field name's value, read in base (10, or 8 for Umask): 0, or -errno (ENOENT: no field). */
int procstatus_field(const char *name, int base, unsigned long *ret);

#endif
