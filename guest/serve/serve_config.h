/* SPDX-License-Identifier: Apache-2.0 */
/* What `sandbox-agent serve` is told to do: transports, keys, and what every boot gets. */
#ifndef SA_SERVE_CONFIG_H
#define SA_SERVE_CONFIG_H

#include <stdbool.h>
#include <stdint.h>

#define SERVE_VSOCK_PORT 7340 /* the agent's documented vsock port */
#define SERVE_HOST_CID 2      /* VMADDR_CID_HOST: the only peer accepted by default */
#define SERVE_DEFAULT_UNIX "/run/sandbox-agent/agent.sock"
#define SERVE_DEFAULT_SERIAL "/dev/virtio-ports/org.sandbox-app-runtime.agent"
#define SERVE_DEFAULT_AUTHKEYS "/etc/sandbox-agent/authorized_keys"
#define SERVE_DEFAULT_AUTHKEYS_DIR "/etc/sandbox-agent/authorized_keys.d"
#define SERVE_DEFAULT_KEY "/var/lib/sandbox-agent/guest_key"
#define SERVE_DEFAULT_STATE_DIR "/run/sandbox-agent"
#define SERVE_PUBLISH_TIMEOUT_MS (5u * 60 * 1000)

struct serve_config {
	char **unix_paths;        /* --unix PATH (repeatable) */
	bool vsock;               /* --vsock */
	unsigned vsock_port;      /* 0: SERVE_VSOCK_PORT */
	uint32_t vsock_allow_cid; /* peer CID accepted on vsock (SERVE_HOST_CID) */
	const char *serial_path;  /* --serial PATH */
	bool serial_wait;         /* a missing port is waited for (opened once udev makes it) */
	bool stdio;               /* --stdio: one session on fds 0 and 1, then exit */
	bool one_shot;            /* this daemon ends with its session: its hello says so */
	const char *authkeys_file;
	const char *authkeys_dir;
	const char *key_path;
	const char *state_dir;
	int handshake_timeout_ms;
	unsigned publish_timeout_ms; /* a publish's runner is killed after this */
	/* What every boot gets (sandbox-app-boot's options of the same names). */
	const char *user;
	const char *listen_addr;
	unsigned listen_port;
	bool no_forward;
	unsigned grace_ms;
	const char *cache_root;
	const char *runner; /* the executable run as the boot runner: /proc/self/exe */
};

#endif
