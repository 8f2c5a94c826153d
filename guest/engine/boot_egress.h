/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Egress rules in the guest (docs/design.md, "Egress in the guest"): with a proxy in the plan,
 * the agent loads an nftables table of its own, `table inet sandbox_app_runtime`, through
 * Debian's nft (`nft -f`), whose output chain lets the app's user and the agent's user
 * (`claude`, or SANDBOX_CLAUDE_USER as for sandbox-claude, where it exists) reach loopback and the
 * proxy's address and port only, and refuses the rest of their connections (TCP reset, ICMP
 * otherwise). Root, and so the daemon and its channel, is not matched. The table is replaced as a
 * whole, atomically, at every boot and deleted on --discard.
 */
#ifndef SA_BOOT_EGRESS_H
#define SA_BOOT_EGRESS_H

#include "boot_plan.h"
#include "boot_state.h"

#define BOOT_EGRESS_TABLE "sandbox_app_runtime"

/*
 * Apply the plan's egress rules and record the outcome in st->egress (JSON text: status
 * "applied", "skipped" (why in "detail") or "off"). When they cannot be applied (nft missing,
 * the kernel refuses) a required confinement fails the boot (ERR_FAILED, nft's own words); else
 * a warning goes to *notes and the boot goes on.
 */
int boot_egress_apply(const struct boot_plan *p, struct boot_state *st, char ***notes,
                      struct err *err);
/* Delete the table (nothing when there is none or nft is missing): --discard. */
void boot_egress_remove(const struct boot_plan *p);

#endif
