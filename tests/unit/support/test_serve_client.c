/* SPDX-License-Identifier: Apache-2.0 */
/* Compiled once, linked into every unit test (tests/unit/support/test_serve_client.h). */
#include "test_serve_client.h"

void got_dispose(struct got *g)
{
	json_object_put(g->json);
	free(g->data);
	memset(g, 0, sizeof(*g));
}

void client_free(struct client *c)
{
	for (size_t i = 0; i < c->n; i++)
		got_dispose(&c->inbox[i]);
	free(c->inbox);
	channel_free(c->ch);
	frame_io_free(c->io);
	if (c->wfd >= 0 && c->wfd != c->fd)
		close(c->wfd);
	if (c->fd >= 0)
		close(c->fd);
	memset(c, 0, sizeof(*c));
	c->fd = c->wfd = -1;
}

int client_start(struct client *c, int fd, int wfd, const struct keypair *key)
{
	memset(c, 0, sizeof(*c));
	c->fd = fd;
	c->wfd = wfd;
	c->next_stream = 1;
	if (frame_io_new(fd, &c->io, &c->err) < 0)
		return -1;
	if (wfd != fd)
		frame_io_set_write_fd(c->io, wfd);
	if (channel_handshake_host(c->io, key, NULL, 10000, &c->ch, &c->err) < 0)
		return -1;
	return 0;
}

int unix_connect(const char *path)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);

	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);
	if (fd < 0 || connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		if (fd >= 0)
			close(fd);
		return -1;
	}
	return fd;
}

int client_connect(struct client *c, const char *path, const struct keypair *key)
{
	int fd = unix_connect(path);

	if (fd < 0) {
		memset(c, 0, sizeof(*c));
		c->fd = c->wfd = -1;
		err_errno(&c->err, "connect %s", path);
		return -1;
	}
	return client_start(c, fd, fd, key);
}

uint32_t client_send(struct client *c, uint16_t type, uint16_t flags, uint32_t stream,
                     json_object *json, const void *data, size_t len)
{
	struct msg m = {.type = type,
	                .flags = flags,
	                .stream = stream,
	                .json = json,
	                .data = data,
	                .data_len = len};
	int r;

	if (stream == NEW_STREAM) {
		m.stream = stream = c->next_stream;
		c->next_stream += 2;
	}
	r = channel_send(c->ch, &m, 10000, &c->err);
	json_object_put(json);
	return r < 0 ? 0 : (stream ? stream : 1);
}

int client_pull(struct client *c, int timeout_ms)
{
	struct msg m;
	struct got *v;
	int r = channel_recv(c->ch, &m, timeout_ms, &c->err);

	if (r <= 0)
		return r < 0 ? -1 : 0;
	v = realloc(c->inbox, (c->n + 1) * sizeof(*v));
	if (!v)
		abort();
	c->inbox = v;
	v[c->n] = (struct got){.type = m.type,
	                       .flags = m.flags,
	                       .stream = m.stream,
	                       .json = json_object_get(m.json),
	                       .len = m.data_len};
	v[c->n].data = malloc(m.data_len + 1);
	if (m.data_len)
		memcpy(v[c->n].data, m.data, m.data_len);
	v[c->n].data[m.data_len] = '\0';
	c->n++;
	msg_dispose(&m);
	return 1;
}

ssize_t client_wait_end(struct client *c, uint32_t stream, int timeout_ms)
{
	int64_t deadline = frame_io_deadline(timeout_ms);

	for (;;) {
		for (size_t i = 0; i < c->n; i++)
			if (c->inbox[i].stream == stream && (c->inbox[i].flags & MSG_F_END))
				return (ssize_t)i;
		if (frame_io_now_ms() >= deadline)
			return -1;
		if (client_pull(c, (int)(deadline - frame_io_now_ms())) <= 0)
			return -1;
	}
}

ssize_t client_wait_type(struct client *c, uint32_t stream, uint16_t type, size_t from,
                         int timeout_ms)
{
	int64_t deadline = frame_io_deadline(timeout_ms);

	for (;;) {
		for (size_t i = from; i < c->n; i++)
			if (c->inbox[i].stream == stream && c->inbox[i].type == type)
				return (ssize_t)i;
		if (frame_io_now_ms() >= deadline)
			return -1;
		if (client_pull(c, (int)(deadline - frame_io_now_ms())) <= 0)
			return -1;
	}
}

struct got *client_request(struct client *c, uint16_t type, json_object *json, const void *data,
                           size_t len)
{
	uint32_t st = client_send(c, type, MSG_F_END, NEW_STREAM, json, data, len);
	ssize_t i;

	if (!st)
		return NULL;
	i = client_wait_end(c, st, CLIENT_TIMEOUT_MS);
	return i < 0 ? NULL : &c->inbox[i];
}

const char *got_string(const struct got *g, const char *key)
{
	json_object *v;

	if (!g || !g->json || !json_object_object_get_ex(g->json, key, &v))
		return NULL;
	return json_object_get_string(v);
}

int64_t got_int(const struct got *g, const char *key)
{
	json_object *v;

	if (!g || !g->json || !json_object_object_get_ex(g->json, key, &v))
		return -1;
	return json_object_get_int64(v);
}

json_object *jobj(const char *key, ...)
{
	json_object *o = json_object_new_object();
	va_list ap;

	va_start(ap, key);
	for (const char *k = key; k; k = va_arg(ap, const char *))
		json_object_object_add(o, k, json_object_new_string(va_arg(ap, const char *)));
	va_end(ap);
	return o;
}

int push_dir(struct client *c, uint32_t st, const char *src, const char *rel, struct push_count *n)
{
	DIR *d = opendir(src);
	struct dirent *de;

	if (!d)
		return -1;
	while ((de = readdir(d))) {
		char path[PATH_MAX], relpath[PATH_MAX];
		struct stat sb;
		json_object *e;

		if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
			continue;
		snprintf(path, sizeof(path), "%s/%s", src, de->d_name);
		snprintf(relpath, sizeof(relpath), "%s%s%s", rel, rel[0] ? "/" : "", de->d_name);
		if (lstat(path, &sb) < 0)
			continue;
		e = jobj("path", relpath, NULL);
		json_object_object_add(e, "mode", json_object_new_int((int)(sb.st_mode & 0777)));
		n->entries++;
		if (S_ISDIR(sb.st_mode)) {
			json_object_object_add(e, "kind", json_object_new_string("dir"));
			client_send(c, MSG_TREE_PUSH_ENTRY, 0, st, e, NULL, 0);
			push_dir(c, st, path, relpath, n);
		} else if (S_ISLNK(sb.st_mode)) {
			char target[PATH_MAX];
			ssize_t tl = readlink(path, target, sizeof(target) - 1);
			target[tl > 0 ? tl : 0] = '\0';
			json_object_object_add(e, "kind", json_object_new_string("symlink"));
			json_object_object_add(e, "target", json_object_new_string(target));
			client_send(c, MSG_TREE_PUSH_ENTRY, 0, st, e, NULL, 0);
		} else {
			char buf[65536];
			int fd = open(path, O_RDONLY | O_CLOEXEC);
			ssize_t k;
			json_object_object_add(e, "kind", json_object_new_string("file"));
			json_object_object_add(e, "size", json_object_new_int64(sb.st_size));
			client_send(c, MSG_TREE_PUSH_ENTRY, 0, st, e, NULL, 0);
			while (fd >= 0 && (k = read(fd, buf, sizeof(buf))) > 0)
				client_send(c, MSG_TREE_PUSH_DATA, 0, st, NULL, buf, (size_t)k);
			if (fd >= 0)
				close(fd);
			n->bytes += sb.st_size;
		}
	}
	closedir(d);
	return 0;
}

struct got *client_push_tree(struct client *c, const char *app_dir, const char *src)
{
	struct push_count n = {0};
	uint32_t st = client_send(c, MSG_TREE_PUSH_BEGIN, 0, NEW_STREAM,
	                          jobj("app_dir", app_dir, NULL), NULL, 0);
	json_object *end = json_object_new_object();
	ssize_t i;

	push_dir(c, st, src, "", &n);
	json_object_object_add(end, "entries", json_object_new_int64(n.entries));
	json_object_object_add(end, "bytes", json_object_new_int64(n.bytes));
	client_send(c, MSG_TREE_PUSH_END, MSG_F_END, st, end, NULL, 0);
	i = client_wait_end(c, st, CLIENT_TIMEOUT_MS);
	return i < 0 ? NULL : &c->inbox[i];
}
