/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The guest's half of `sandbox-ctl verify` (docs/isolation.md "verify"): what the guest can
 * observe of its own confinement. Each probe returns a JSON object {"name", "passed",
 * "detail", ...}; none of them trusts the network to answer quickly (every connection is
 * capped) and none follows a redirect.
 */
#ifndef SA_CONFINE_PROBE_H
#define SA_CONFINE_PROBE_H

#include <json-c/json.h>

#include "err.h"

#define CONFINE_PROBE_URLS_MAX 8
#define CONFINE_PROBE_URL_MAX 2048
#define CONFINE_PROBE_TOKEN_MAX 128
/* Every connection attempt, and all network probes together. */
#define CONFINE_PROBE_CONNECT_MS 2000L
#define CONFINE_PROBE_TOTAL_MS 5000L

/*
 * Check 1: passed when the boot id differs from host's (another kernel) or the mount, pid and
 * network namespaces all differ from the host's. host is sysid_json() of the host.
 */
json_object *confine_probe_kernel(json_object *host);

/* Check 2: passed unless the file at path can be read here and holds token. */
json_object *confine_probe_host_file(const char *path, const char *token);

/*
 * Checks 3 and 4, run together under one deadline (CONFINE_PROBE_TOTAL_MS): allowed fetched
 * through proxy must get an answer from its origin (not the proxy's refusal); each of
 * forbidden[] (n of them) must be refused both directly (a TCP connection must not open) and
 * through the proxy (the proxy must refuse or fail), and directly only when its host is an
 * address (a name would wait on the guest's resolver past every cap). *ret_allowed and
 * *ret_refused get the two
 * checks.
 */
int confine_probe_network(const char *proxy, const char *allowed, const char *const *forbidden,
                          size_t n, json_object **ret_allowed, json_object **ret_refused,
                          struct err *err);

#endif
