/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Services a boot needs from the image: a local PostgreSQL cluster when the app's
 * database.yml asks for PostgreSQL (started if stopped; the run user gets a role that may
 * create databases, so the app's own db:prepare creates its database), and the services a
 * spec's toolchain names.
 */
#ifndef SA_BOOT_SERVICES_H
#define SA_BOOT_SERVICES_H

#include "boot_plan.h"
#include "err.h"

/*
 * Start what the plan needs. before, when not NULL, is called once before the first service
 * starts (a service may take seconds: the engine saves its state then), and not at all when
 * there is none.
 */
int boot_services_start(const struct boot_plan *p, void (*before)(void *userdata), void *userdata,
                        struct err *err);
/* Drop the boot's throwaway server databases (--discard). */
int boot_services_drop_databases(const struct boot_plan *p, struct err *err);

#endif
