/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Building a boot plan from the caller's options and the app's configuration: paths, the
 * run user, the throwaway databases, the environment, the steps and the known secrets.
 * Nothing here starts a process; with dry_run nothing is written either.
 */
#include "boot_plan.h"

#include <errno.h>
#include <fcntl.h>
#include <json-c/json.h>
#include <sodium.h>
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "json_strict.h"
#include "boot_spec.h"
#include "child_env.h"
#include "file.h"
#include "fs_safe.h"
#include "log.h"
#include "sandbox_config.h"
#include "strv.h"

static char *path_join(const char *a, const char *b)
{
	char *r = NULL;

	if (asprintf(&r, "%s/%s", a, b) < 0)
		return NULL;
	return r;
}

static char *parent_dir(const char *path)
{
	_cleanup_free_ char *copy = strdup(path);

	if (!copy)
		return NULL;
	return strdup(dirname(copy));
}

static int oom(struct err *err)
{
	return err_oom(err);
}

/*
 * The session id: the caller's SANDBOX_SESSION_ID, else the one this workspace already has,
 * else a new one. It is kept in the state directory either way, so later requests without
 * the caller's environment (--stop, --discard) name the same databases.
 */
static int plan_session_id(struct boot_plan *p, const struct boot_options *o, struct err *err)
{
	const char *caller = strv_env_get(o->caller_env, "SANDBOX_SESSION_ID");
	_cleanup_free_ char *path = path_join(p->state_dir, "session_id");
	_cleanup_free_ char *kept = NULL;
	char fresh[33], line[256];
	struct err ignored;

	if (!path)
		return oom(err);
	if (file_read_capped(AT_FDCWD, path, 256, READ_NOFOLLOW | READ_MISSING_OK, &kept, NULL,
	                     &ignored) == 0 &&
	    kept)
		kept[strcspn(kept, "\n")] = '\0';
	if (caller && *caller) {
		if (strlen(caller) > 128)
			return err_set(err, ERR_REFUSED, EINVAL,
			               "SANDBOX_SESSION_ID is longer than 128 characters");
		p->session_id = strdup(caller);
	} else if (kept && *kept) {
		p->session_id = strdup(kept); /* kept stays, to compare with below */
	} else {
		child_env_session_id_generate(fresh);
		p->session_id = strdup(fresh);
	}
	if (!p->session_id)
		return oom(err);
	if (!o->dry_run && (!kept || strcmp(kept, p->session_id) != 0)) {
		snprintf(line, sizeof(line), "%s\n", p->session_id);
		if (file_write_replace(path, line, strlen(line), 0600, (uid_t)-1, (gid_t)-1, err) <
		    0)
			return err_wrap(err, "cannot keep the session id");
	}
	return 0;
}

static int plan_user(struct boot_plan *p, const struct boot_options *o, const char *spec_user,
                     bool spec_user_given, struct err *err)
{
	const char *name = o->user;

	/* Replaces the caller identity boot_plan_build starts with. */
	proc_user_dispose(&p->user);
	if (!name && spec_user_given)
		name = spec_user ? spec_user : "";
	if (name && *name)
		return proc_user_lookup(name, &p->user, err);
	if (!name && geteuid() == 0) {
		struct err probe;
		if (proc_user_lookup(BOOT_DEFAULT_USER, &p->user, &probe) == 0)
			return 0;
	}
	proc_user_self(&p->user);
	return 0;
}

static int step_init(struct plan_step *s, const char *name, const char *command, unsigned timeout,
                     const char *skip, const char *if_task, const char *logs_dir,
                     const char *log_name)
{
	char file[128];

	snprintf(file, sizeof(file), "%s.log", log_name);
	s->name = strdup(name);
	s->command = command ? strdup(command) : strdup("");
	s->timeout = timeout;
	s->skip = skip ? strdup(skip) : NULL;
	s->if_task = if_task ? strdup(if_task) : NULL;
	s->log_path = path_join(logs_dir, file);
	if (!s->name || !s->command || !s->log_path || (skip && !s->skip) ||
	    (if_task && !s->if_task))
		return -ENOMEM;
	return 0;
}

static void step_dispose(struct plan_step *s)
{
	free(s->name);
	free(s->command);
	free(s->skip);
	free(s->if_task);
	free(s->log_path);
	strv_free(s->env);
	memset(s, 0, sizeof(*s));
}

/* Values the scrubber must mask: whatever the caller holds under a secret-looking name. */
static int plan_secrets(struct boot_plan *p, const struct boot_options *o, char *const *opted,
                        const char *skb, struct err *err)
{
	p->scrub = scrub_new();
	if (!p->scrub)
		return oom(err);
	for (size_t i = 0; o->caller_env && o->caller_env[i]; i++) {
		const char *entry = o->caller_env[i];
		size_t nl = strv_env_name_len(entry);
		_cleanup_free_ char *name = strndup(entry, nl);
		const char *value = entry[nl] ? entry + nl + 1 : "";
		int r;

		if (!name)
			return oom(err);
		if (!child_env_name_looks_secret(name) && !child_env_value_has_userinfo(value) &&
		    !strv_contains(opted, name) && !child_env_name_is_dropped(name))
			continue;
		/* Dropped non-secret names (RAILS_ENV, PORT...) hold short values: harmless. */
		if (!child_env_name_looks_secret(name) && !strv_contains(opted, name) &&
		    !child_env_value_has_userinfo(value) && strlen(value) < 16)
			continue;
		r = scrub_add(p->scrub, value, strlen(value));
		if (r == -E2BIG)
			return err_set(
			    err, ERR_REFUSED, E2BIG,
			    "%s holds more than %d KiB: too long a secret to mask in the "
			    "boot's output; pass a shorter one, or a file",
			    name, SCRUB_MAX_SECRET / 1024);
		if (r < 0)
			return oom(err);
		if (child_env_name_looks_secret(name) || strv_contains(opted, name))
			if (strv_push(&p->secret_env_names, name) < 0)
				return oom(err);
	}
	if (skb && scrub_add(p->scrub, skb, strlen(skb)) < 0)
		return oom(err);
	if (!strv_contains(p->secret_env_names, "SECRET_KEY_BASE") &&
	    strv_push(&p->secret_env_names, "SECRET_KEY_BASE") < 0)
		return oom(err);
	return 0;
}

static int plan_paths(struct boot_plan *p, const struct boot_options *o, const char *app_dir,
                      const char *spec_dir, const char *manifest_path, struct err *err)
{
	char real[PATH_MAX];

	if (!realpath(app_dir, real))
		return err_set(err, ERR_REFUSED, errno, "the app directory %s cannot be used: %s",
		               app_dir, strerror(errno));
	{
		struct stat st;
		if (stat(real, &st) < 0 || !S_ISDIR(st.st_mode))
			return err_set(err, ERR_REFUSED, ENOTDIR, "%s is not a directory", app_dir);
	}
	if (strcmp(real, "/") == 0)
		return err_set(err, ERR_REFUSED, EINVAL, "the app directory cannot be /");
	p->app_dir = strdup(real);
	if (o->workspace) {
		if (!realpath(o->workspace, real))
			return err_set(err, ERR_REFUSED, errno,
			               "the workspace %s cannot be used: %s", o->workspace,
			               strerror(errno));
		p->workspace = strdup(real);
	} else {
		p->workspace = parent_dir(p->app_dir);
	}
	if (!p->app_dir || !p->workspace)
		return oom(err);
	if (spec_dir)
		p->state_dir = strdup(spec_dir);
	else
		p->state_dir = path_join(p->workspace, ".sandbox");
	if (!p->state_dir)
		return oom(err);
	p->logs_dir = path_join(p->state_dir, "logs");
	p->runtime_path =
	    manifest_path ? strdup(manifest_path) : path_join(p->workspace, "runtime.json");
	p->manifest_scratch_dir = path_join(p->workspace, ".sandbox-manifest");
	p->manifest_scratch =
	    p->manifest_scratch_dir ? path_join(p->manifest_scratch_dir, "manifest.json") : NULL;
	p->db_dir = path_join(p->workspace, "db");
	p->cache_root = strdup(o->cache_root ? o->cache_root : BOOT_DEFAULT_CACHE_ROOT);
	p->services_dir = strdup(o->services_dir ? o->services_dir : BOOT_DEFAULT_SERVICES_DIR);
	if (!p->logs_dir || !p->runtime_path || !p->manifest_scratch || !p->db_dir ||
	    !p->cache_root || !p->services_dir)
		return oom(err);
	/*
	 * As root the engine writes runtime.json, state and logs here: nobody else may be able
	 * to plant links or files in these directories or their parents.
	 */
	if (!o->dry_run && geteuid() == 0) {
		_cleanup_free_ char *rt_dir = parent_dir(p->runtime_path);
		if (!rt_dir)
			return oom(err);
		if (access(rt_dir, F_OK) < 0 && file_mkdir_p(rt_dir, 0755, err) < 0)
			return err_wrap(err, "cannot create the directory of %s", p->runtime_path);
		if (fs_safe_dir_check_root_owned(p->workspace, err) < 0 ||
		    fs_safe_dir_check_root_owned(rt_dir, err) < 0 ||
		    (spec_dir && fs_safe_dir_check_root_owned(spec_dir, err) < 0))
			return -1;
	}
	if (!o->dry_run && file_mkdir_p(p->logs_dir, 0700, err) < 0)
		return err_wrap(err, "cannot create the boot's state directory");
	if (!o->dry_run && geteuid() == 0 &&
	    (fs_safe_dir_check_root_owned(p->state_dir, err) < 0 ||
	     fs_safe_dir_check_root_owned(p->logs_dir, err) < 0))
		return -1;
	/* Our own directory is closed to others; a spec's directory is the platform's to set. */
	if (!o->dry_run && !spec_dir && chmod(p->state_dir, 0700) < 0)
		return err_errno(err, "cannot protect %s", p->state_dir);
	return 0;
}

static int plan_env(struct boot_plan *p, const struct boot_options *o, char *const *file_env,
                    char *const *opted, struct err *err)
{
	char skb[129] = {0};
	_cleanup_free_ char *skb_path = path_join(p->state_dir, "secret_key_base");
	struct database_request dbreq;
	struct child_env_request req;
	const char *file_rails_env = strv_env_get(file_env, "RAILS_ENV");
	int r;

	if (!skb_path)
		return oom(err);
	p->rails_env = strdup(file_rails_env && *file_rails_env ? file_rails_env : "development");
	if (!p->rails_env)
		return oom(err);

	dbreq = (struct database_request){
	    .rails_env = p->rails_env,
	    .workspace = p->workspace,
	    .session_id = p->session_id,
	    .file_env = file_env,
	};
	r = database_config_plan_resolve(p->app_dir, &dbreq, &p->db, err);
	if (r < 0)
		return err_wrap(err, "Sandbox databases failed");

	if (!strv_env_get(file_env, "SECRET_KEY_BASE")) {
		if (o->dry_run) {
			struct err ignored;
			if (access(skb_path, F_OK) < 0 ||
			    child_env_secret_key_base_load(skb_path, skb, &ignored) < 0)
				memset(skb, 0, sizeof(skb));
		} else if (child_env_secret_key_base_load(skb_path, skb, err) < 0) {
			return err_wrap(err, "cannot keep the sandbox's SECRET_KEY_BASE");
		}
	}

	req = (struct child_env_request){
	    .caller_env = o->caller_env,
	    .pass_env = opted,
	    .db_env = p->db.env,
	    .file_env = file_env,
	    .manifest_path = p->manifest_scratch,
	    .session_id = p->session_id,
	    .secret_key_base = skb[0] ? skb : (o->dry_run ? "(generated at boot)" : NULL),
	    .cache_root = p->cache_root,
	    .home = p->user.uid != (uid_t)-1 ? p->user.home : NULL,
	    .user = p->user.uid != (uid_t)-1 ? p->user.name : NULL,
	    .egress_proxy = p->egress.proxy,
	};
	r = child_env_build(&req, &p->env, err);
	if (r < 0) {
		sodium_memzero(skb, sizeof(skb));
		return r;
	}
	r = plan_secrets(p, o, opted, skb[0] ? skb : NULL, err);
	sodium_memzero(skb, sizeof(skb));
	return r;
}

static int plan_from_directory(struct boot_plan *p, const struct boot_options *o, struct err *err)
{
	struct sandbox_config cfg = {0};
	int r;

	r = plan_paths(p, o, o->app_dir, NULL, NULL, err);
	if (r < 0)
		return r;
	r = sandbox_config_load_noted(p->app_dir, &p->warnings, &cfg, err);
	for (size_t i = 0; o->notes && p->warnings && p->warnings[i]; i++)
		if (strv_push(o->notes, p->warnings[i]) < 0)
			break;
	if (r < 0) {
		err_wrap(err, "Sandbox configuration failed");
		err->cls = ERR_REFUSED;
		return r;
	}
	r = egress_config_resolve(NULL, &cfg.egress, o->caller_env, &p->egress, err);
	/* A stop or discard needs no proxy to remove rules (the daemon's may be gone now). */
	if (r < 0 && o->for_cleanup && p->egress.nft) {
		err_clear(err);
		r = 0;
	}
	if (r < 0) {
		err_wrap(err, "Sandbox configuration failed");
		goto out_config;
	}
	r = plan_user(p, o, NULL, false, err);
	if (r >= 0)
		r = plan_session_id(p, o, err);
	if (r >= 0)
		r = plan_env(p, o, cfg.env, o->pass_env, err);
	if (r < 0)
		goto out_config;

	p->n_steps = strv_length(cfg.setup);
	p->steps = calloc(p->n_steps ? p->n_steps : 1, sizeof(*p->steps));
	if (!p->steps) {
		r = oom(err);
		goto out_config;
	}
	for (size_t i = 0; i < p->n_steps; i++)
		if (step_init(&p->steps[i], "setup", cfg.setup[i], 0, NULL, NULL, p->logs_dir,
		              "setup") < 0) {
			r = oom(err);
			goto out_config;
		}
	if (step_init(&p->manifest, "manifest", cfg.manifest, 0, NULL, NULL, p->logs_dir,
	              "manifest") < 0 ||
	    step_init(&p->start, "start", cfg.start, 0, NULL, NULL, p->logs_dir, "server") < 0) {
		r = oom(err);
		goto out_config;
	}
	p->timeout = o->timeout ? o->timeout : BOOT_DEFAULT_TIMEOUT;
	r = limits_config_resolve(NULL, &cfg.limits, o->caller_env, &p->limits, err);
	if (r < 0)
		goto out_config;
	p->listen_port = o->listen_port ? o->listen_port : BOOT_DEFAULT_LISTEN_PORT;
	p->check_up = !o->no_forward;
	r = 0;
out_config:
	sandbox_config_dispose(&cfg);
	return r;
}

static int plan_from_spec(struct boot_plan *p, const struct boot_options *o, struct err *err)
{
	struct boot_spec spec = {0};
	_cleanup_free_ char *spec_dir = NULL;
	_cleanup_strv_ char **opted = NULL;
	char real[PATH_MAX];
	int r;

	r = boot_spec_load(o->spec_path, &spec, err);
	if (r < 0)
		return r;
	if (!realpath(o->spec_path, real)) {
		r = err_errno(err, "cannot resolve %s", o->spec_path);
		goto out_spec;
	}
	spec_dir = parent_dir(real);
	opted = strv_copy(o->pass_env);
	if (!spec_dir || (o->pass_env && !opted)) {
		r = oom(err);
		goto out_spec;
	}
	for (size_t i = 0; spec.secret_names && spec.secret_names[i]; i++) {
		if (!strv_env_get(o->caller_env, spec.secret_names[i]) && !o->for_cleanup) {
			r = err_set(err, ERR_REFUSED, ENOENT,
			            "the secret %s named in the spec's secret_names is not set in "
			            "the caller's environment",
			            spec.secret_names[i]);
			goto out_spec;
		}
		if (strv_push(&opted, spec.secret_names[i]) < 0) {
			r = oom(err);
			goto out_spec;
		}
	}
	r = plan_paths(p, o, spec.app_dir, spec_dir, spec.manifest_path, err);
	if (r >= 0)
		r = egress_config_resolve(&spec.egress, NULL, o->caller_env, &p->egress, err);
	if (r < 0 && o->for_cleanup && p->egress.nft) {
		err_clear(err);
		r = 0;
	}
	if (r >= 0)
		r = plan_user(p, o, spec.user, true, err);
	if (r >= 0)
		r = plan_session_id(p, o, err);
	if (r >= 0)
		r = plan_env(p, o, spec.env, opted, err);
	if (r < 0)
		goto out_spec;

	p->n_steps = spec.n_steps;
	p->steps = calloc(p->n_steps ? p->n_steps : 1, sizeof(*p->steps));
	if (!p->steps) {
		r = oom(err);
		goto out_spec;
	}
	for (size_t i = 0; i < spec.n_steps; i++) {
		const struct boot_step *s = &spec.steps[i];
		if (step_init(&p->steps[i], s->name, s->command, s->timeout, s->skip, s->if_task,
		              p->logs_dir, s->name) < 0) {
			r = oom(err);
			goto out_spec;
		}
	}
	if (step_init(&p->manifest, "manifest", spec.manifest.command, spec.manifest.timeout, NULL,
	              NULL, p->logs_dir, "manifest") < 0 ||
	    step_init(&p->start, "start", spec.start.command, spec.start.timeout, NULL, NULL,
	              p->logs_dir, "start") < 0) {
		r = oom(err);
		goto out_spec;
	}
	p->port = spec.port;
	p->timeout = o->timeout ? o->timeout : (spec.timeout ? spec.timeout : BOOT_DEFAULT_TIMEOUT);
	r = limits_config_resolve(&spec.limits, NULL, o->caller_env, &p->limits, err);
	if (r < 0)
		goto out_spec;
	p->listen_port = o->listen_port ? o->listen_port : spec.listen_port;
	if (spec.start_url && !(p->start_url = strdup(spec.start_url))) {
		r = oom(err);
		goto out_spec;
	}
	p->keep_on_failure = spec.keep_on_failure;
	p->mode = TAKE_PTR(spec.mode);
	p->kind = TAKE_PTR(spec.kind);
	p->recorded_steps = TAKE_PTR(spec.recorded_steps);
	p->directories = TAKE_PTR(spec.directories);
	p->toolchain = spec.toolchain;
	memset(&spec.toolchain, 0, sizeof(spec.toolchain));
	r = 0;
out_spec:
	boot_spec_dispose(&spec);
	return r;
}

int boot_plan_build(const struct boot_options *o, struct boot_plan *ret, struct err *err)
{
	struct boot_plan p = {.shape = o->shape};
	int r;

	proc_user_self(&p.user);
	p.grace_ms = o->grace_ms ? o->grace_ms : BOOT_DEFAULT_GRACE_MS;
	if (o->shape == BOOT_SHAPE_SPEC)
		r = plan_from_spec(&p, o, err);
	else
		r = plan_from_directory(&p, o, err);
	if (r < 0)
		goto out_fail;

	r = toolchain_select(p.app_dir, &p.toolchain, o->caller_env, p.user.home, &p.env, &p.tools,
	                     err);
	if (r < 0 && o->for_cleanup) {
		r = 0;
	} else if (r < 0) {
		err_wrap(err, "Sandbox toolchain failed");
		goto out_fail;
	}
	if (!o->no_forward && p.listen_port) {
		p.listen_addr = strdup(o->listen_addr ? o->listen_addr : BOOT_DEFAULT_LISTEN_ADDR);
		if (!p.listen_addr) {
			r = oom(err);
			goto out_fail;
		}
	}
	if (o->from_step && boot_plan_step_index(&p, o->from_step) < 0) {
		r = err_set(err, ERR_REFUSED, ENOENT,
		            "--from %s: the boot has no step of that name", o->from_step);
		goto out_fail;
	}
	*ret = p;
	return 0;
out_fail:
	boot_plan_dispose(&p);
	return r;
}

int boot_plan_step_index(const struct boot_plan *p, const char *name)
{
	/* The phases before the steps: resuming at one of them reruns every step. */
	if (strcmp(name, "checkout") == 0 || strcmp(name, "preflight") == 0 ||
	    strcmp(name, "toolchain") == 0)
		return 0;
	for (size_t i = 0; i < p->n_steps; i++)
		if (strcmp(p->steps[i].name, name) == 0)
			return (int)i;
	if (strcmp(name, "manifest") == 0)
		return (int)p->n_steps;
	if (strcmp(name, "start") == 0)
		return (int)p->n_steps + 1;
	return -1;
}

void boot_plan_dispose(struct boot_plan *p)
{
	free(p->app_dir);
	egress_config_dispose(&p->egress);
	free(p->workspace);
	free(p->state_dir);
	free(p->logs_dir);
	free(p->runtime_path);
	free(p->manifest_scratch_dir);
	free(p->manifest_scratch);
	free(p->db_dir);
	free(p->cache_root);
	free(p->services_dir);
	free(p->mode);
	free(p->kind);
	free(p->recorded_steps);
	free(p->session_id);
	free(p->rails_env);
	proc_user_dispose(&p->user);
	for (size_t i = 0; i < p->n_steps; i++)
		step_dispose(&p->steps[i]);
	free(p->steps);
	step_dispose(&p->manifest);
	step_dispose(&p->start);
	strv_free(p->env);
	strv_free(p->secret_env_names);
	database_config_plan_dispose(&p->db);
	free(p->listen_addr);
	free(p->start_url);
	strv_free(p->directories);
	free(p->toolchain.ruby);
	free(p->toolchain.node);
	free(p->toolchain.bun);
	strv_free(p->toolchain.services);
	toolchain_choice_dispose(&p->tools);
	scrub_free(p->scrub);
	strv_free(p->warnings);
	memset(p, 0, sizeof(*p));
}

/* --dry-run output */

static json_object *env_to_json(const struct boot_plan *p, char *const *env)
{
	json_object *o = json_object_new_object();

	for (size_t i = 0; env && env[i]; i++) {
		size_t nl = strv_env_name_len(env[i]);
		_cleanup_free_ char *name = strndup(env[i], nl);
		const char *value = env[i][nl] ? env[i] + nl + 1 : "";

		if (!name)
			continue;
		if (strv_contains(p->secret_env_names, name) || child_env_name_looks_secret(name) ||
		    child_env_value_has_userinfo(value))
			json_object_object_add(o, name, NULL);
		else
			json_object_object_add(o, name, json_object_new_string(value));
	}
	return o;
}

static json_object *strv_to_json(char *const *v)
{
	json_object *a = json_object_new_array();

	for (size_t i = 0; v && v[i]; i++)
		json_object_array_add(a, json_object_new_string(v[i]));
	return a;
}

static json_object *step_to_json(const struct boot_plan *p, const struct plan_step *s,
                                 bool with_port)
{
	json_object *o = json_object_new_object();

	json_object_object_add(o, "name", json_object_new_string(s->name));
	json_object_object_add(o, "command", json_object_new_string(s->command));
	json_object_object_add(o, "timeout", json_object_new_int64(s->timeout));
	if (s->skip)
		json_object_object_add(o, "skip", json_object_new_string(s->skip));
	if (s->if_task)
		json_object_object_add(o, "if_task", json_object_new_string(s->if_task));
	json_object_object_add(o, "log", json_object_new_string(s->log_path));
	json_object_object_add(o, "gets_port", json_object_new_boolean(with_port));
	return o;
}

char *boot_plan_to_json(const struct boot_plan *p)
{
	_cleanup_json_ json_object *root = json_object_new_object();
	json_object *steps = json_object_new_array();
	json_object *dbs = json_object_new_array();
	json_object *user = json_object_new_object();
	const char *text;

	json_object_object_add(
	    root, "shape",
	    json_object_new_string(p->shape == BOOT_SHAPE_SPEC ? "spec" : "directory"));
	json_object_object_add(root, "app_dir", json_object_new_string(p->app_dir));
	json_object_object_add(root, "workspace", json_object_new_string(p->workspace));
	json_object_object_add(root, "state_dir", json_object_new_string(p->state_dir));
	json_object_object_add(root, "logs_dir", json_object_new_string(p->logs_dir));
	json_object_object_add(root, "runtime_json", json_object_new_string(p->runtime_path));
	json_object_object_add(root, "manifest_scratch",
	                       json_object_new_string(p->manifest_scratch));
	json_object_object_add(root, "session_id", json_object_new_string(p->session_id));
	json_object_object_add(root, "rails_env", json_object_new_string(p->rails_env));
	json_object_object_add(user, "name",
	                       p->user.name ? json_object_new_string(p->user.name) : NULL);
	json_object_object_add(user, "uid",
	                       json_object_new_int64(p->user.uid == (uid_t)-1
	                                                 ? (int64_t)getuid()
	                                                 : (int64_t)p->user.uid));
	json_object_object_add(root, "user", user);
	for (size_t i = 0; i < p->n_steps; i++)
		json_object_array_add(steps, step_to_json(p, &p->steps[i], false));
	json_object_array_add(steps, step_to_json(p, &p->manifest, true));
	json_object_array_add(steps, step_to_json(p, &p->start, true));
	json_object_object_add(root, "steps", steps);
	json_object_object_add(root, "limits", limits_config_to_json(&p->limits));
	json_object_object_add(root, "egress_proxy",
	                       p->egress.proxy ? json_object_new_string(p->egress.proxy) : NULL);
	json_object_object_add(root, "egress_required",
	                       json_object_new_boolean(p->egress.required));
	json_object_object_add(root, "environment", env_to_json(p, p->env));
	json_object_object_add(root, "masked_secret_names", strv_to_json(p->secret_env_names));
	json_object_object_add(root, "warnings", strv_to_json(p->warnings));
	for (size_t i = 0; i < p->db.n_entries; i++) {
		json_object *d = json_object_new_object();
		json_object_object_add(d, "name", json_object_new_string(p->db.entries[i].name));
		json_object_object_add(d, "adapter",
		                       json_object_new_string(p->db.entries[i].adapter));
		json_object_object_add(d, "variable",
		                       json_object_new_string(p->db.entries[i].variable));
		json_object_object_add(d, "url", json_object_new_string(p->db.entries[i].url));
		json_object_array_add(dbs, d);
	}
	json_object_object_add(root, "databases", dbs);
	json_object_object_add(root, "port", p->port ? json_object_new_int64(p->port) : NULL);
	if (p->listen_addr) {
		char listen[128];
		snprintf(listen, sizeof(listen), "%s:%u", p->listen_addr, p->listen_port);
		json_object_object_add(root, "listen", json_object_new_string(listen));
	} else {
		json_object_object_add(root, "listen", NULL);
	}
	{
		json_object *tc = json_object_new_object();
		json_object_object_add(
		    tc, "ruby", p->tools.ruby ? json_object_new_string(p->tools.ruby) : NULL);
		json_object_object_add(
		    tc, "node", p->tools.node ? json_object_new_string(p->tools.node) : NULL);
		json_object_object_add(tc, "bun",
		                       p->tools.bun ? json_object_new_string(p->tools.bun) : NULL);
		json_object_object_add(root, "toolchain", tc);
	}
	json_object_object_add(root, "timeout", json_object_new_int64(p->timeout));
	if (p->start_url)
		json_object_object_add(root, "start_url", json_object_new_string(p->start_url));
	text =
	    json_object_to_json_string_ext(root, JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_SPACED |
	                                             JSON_C_TO_STRING_NOSLASHESCAPE);
	return text ? strdup(text) : NULL;
}
