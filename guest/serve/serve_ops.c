/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The daemon's operations, one table: a message that opens a stream is started by the
 * function its type names here. Adding an operation: a message type in common/channel/msg.h,
 * a serve_ops_<name>.c with its header, and one line below (docs/hacking.md).
 */
#include "serve_ops.h"

#include "serve_ops_boot.h"
#include "serve_ops_checkout.h"
#include "serve_ops_logs.h"
#include "serve_ops_publish.h"
#include "serve_ops_query.h"
#include "serve_ops_secrets.h"
#include "serve_ops_session.h"
#include "serve_ops_tree.h"
#include "serve_ops_verify.h"

serve_ops_start_fn serve_ops_find(uint16_t type)
{
	switch (type) {
	case MSG_SECRETS_PUT:
		return serve_ops_secrets_put;
	case MSG_SECRETS_DROP:
		return serve_ops_secrets_drop;
	case MSG_TREE_PUSH_BEGIN:
		return serve_ops_tree_push;
	case MSG_BOOT_START:
		return serve_ops_boot_start;
	case MSG_STATUS:
		return serve_ops_query_status;
	case MSG_LOGS:
		return serve_ops_logs;
	case MSG_STOP:
		return serve_ops_boot_stop;
	case MSG_RUNTIME_READ:
		return serve_ops_query_runtime;
	case MSG_CHECKOUT_PACK:
		return serve_ops_checkout_pack;
	case MSG_CHECKOUT_FETCH:
		return serve_ops_checkout_fetch;
	case MSG_PUBLISH_COMMIT:
		return serve_ops_publish_commit;
	case MSG_VERIFY:
		return serve_ops_verify;
	case MSG_SESSION_START:
		return serve_ops_session_start;
	case MSG_SESSION_SEND:
		return serve_ops_session_send;
	case MSG_SESSION_ANSWER:
		return serve_ops_session_answer;
	case MSG_SESSION_CANCEL:
		return serve_ops_session_cancel;
	case MSG_SESSION_EVENTS:
		return serve_ops_session_events;
	case MSG_SESSION_DIFF:
		return serve_ops_session_diff;
	case MSG_SESSION_LIST:
		return serve_ops_session_list;
	default:
		return NULL;
	}
}
