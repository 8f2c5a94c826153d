/* SPDX-License-Identifier: Apache-2.0 */
/*
 * libcheck: proves that the statically linked dependency set works, not just links. Built by
 * `make static` exactly like sandbox-agent (musl, -static, the cached prefix) and run by
 * tests/integration/test_static.sh inside an empty chroot.
 *
 *   libcheck [URL [CAFILE]]
 *
 * Without arguments it exercises each library offline: libyaml and json-c parse documents,
 * libcurl reports HTTP/HTTPS over mbedTLS and none of the protocols we build without, libgit2
 * reports HTTPS without SSH and hashes a blob into a new repository in the working directory
 * (zlib, SHA-1), libsodium seeds from the kernel and round-trips a crypto_box. With a URL it
 * also fetches it with libcurl (CAFILE as CURLOPT_CAINFO) and expects 200 and "libcheck-ok".
 *
 * Prints "ok <what>" or "FAIL <what>: <why>" per check; exits 0 only if all passed.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <ftw.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <curl/curl.h>
#include <git2.h>
#include <json-c/json.h>
#include <sodium.h>
#include <yaml.h>
#include <zlib.h>

static int failures;

static void check(int ok, const char *what, const char *fmt, ...)
{
	va_list ap;

	if (ok) {
		printf("ok %s\n", what);
		return;
	}
	failures++;
	printf("FAIL %s: ", what);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	putchar('\n');
}

static int yaml_count_scalars(const char *doc, char *problem, size_t len)
{
	yaml_parser_t parser;
	yaml_event_t event;
	int scalars = 0, done = 0;

	if (!yaml_parser_initialize(&parser))
		return -1;
	yaml_parser_set_input_string(&parser, (const unsigned char *)doc, strlen(doc));
	while (!done) {
		if (!yaml_parser_parse(&parser, &event)) {
			snprintf(problem, len, "%s at line %zu",
			         parser.problem ? parser.problem : "?",
			         parser.problem_mark.line + 1);
			scalars = -1;
			break;
		}
		if (event.type == YAML_SCALAR_EVENT)
			scalars++;
		done = event.type == YAML_STREAM_END_EVENT;
		yaml_event_delete(&event);
	}
	yaml_parser_delete(&parser);
	return scalars;
}

static void check_yaml(void)
{
	char problem[256] = "";
	int n;

	n = yaml_count_scalars("app:\n  port: 3000\n  tags: [a, b]\n", problem, sizeof(problem));
	check(n == 6, "yaml parse", "expected 6 scalars, got %d (%s)", n, problem);
	n = yaml_count_scalars("a: [1,\n", problem, sizeof(problem));
	check(n == -1 && problem[0] != '\0', "yaml error", "a broken document parsed (%d)", n);
}

static void check_json(void)
{
	struct json_object *root, *port = NULL, *tags = NULL;
	enum json_tokener_error jerr;

	root = json_tokener_parse_verbose("{\"port\": 3000, \"tags\": [\"a\", \"b\"]}", &jerr);
	check(root && json_object_object_get_ex(root, "port", &port) &&
	          json_object_get_int(port) == 3000 &&
	          json_object_object_get_ex(root, "tags", &tags) &&
	          json_object_array_length(tags) == 2,
	      "json-c parse", "%s", json_tokener_error_desc(jerr));
	json_object_put(root);
	root = json_tokener_parse_verbose("{\"port\": ", &jerr);
	check(!root && jerr != json_tokener_success, "json-c error", "a truncated document parsed");
	json_object_put(root);
}

static void check_curl_build(void)
{
	static const char *const absent[] = {"ftp",    "ftps", "file", "ldap", "ldaps", "dict",
	                                     "telnet", "tftp", "pop3", "imap", "smtp",  "smb",
	                                     "gopher", "rtsp", "mqtt", "scp",  "sftp",  "ws"};
	const curl_version_info_data *v;
	int http = 0, https = 0, extra = 0;
	CURL *curl;

	check(curl_global_init(CURL_GLOBAL_DEFAULT) == CURLE_OK, "curl init", "curl_global_init");
	v = curl_version_info(CURLVERSION_NOW);
	for (const char *const *p = v->protocols; *p; p++) {
		http |= strcmp(*p, "http") == 0;
		https |= strcmp(*p, "https") == 0;
		for (size_t i = 0; i < sizeof(absent) / sizeof(absent[0]); i++)
			if (strcmp(*p, absent[i]) == 0) {
				printf("  unexpected curl protocol %s\n", *p);
				extra++;
			}
	}
	check(http && https, "curl http+https", "protocols lack http or https");
	check(extra == 0, "curl protocols trimmed", "%d protocols we build without", extra);
	check(v->ssl_version && strstr(v->ssl_version, "mbedTLS") &&
	          (v->features & CURL_VERSION_SSL),
	      "curl tls mbedTLS", "ssl backend is %s", v->ssl_version ? v->ssl_version : "none");
	check(v->libz_version != NULL, "curl zlib", "no zlib");
	check(!(v->features &
	        (CURL_VERSION_IDN | CURL_VERSION_PSL | CURL_VERSION_HTTP2 | CURL_VERSION_GSSAPI |
	         CURL_VERSION_NTLM | CURL_VERSION_BROTLI | CURL_VERSION_ZSTD)),
	      "curl features trimmed", "features 0x%x", v->features);
	printf("  libcurl %s, %s, %s\n", v->version, v->ssl_version, v->libz_version);
	curl = curl_easy_init();
	check(curl != NULL, "curl easy handle", "curl_easy_init returned NULL");
	curl_easy_cleanup(curl);
}

static size_t body_append(char *data, size_t size, size_t n, void *userdata)
{
	char *body = userdata;
	size_t have = strlen(body), add = size * n;

	if (add > 4095 - have)
		add = 4095 - have;
	memcpy(body + have, data, add);
	body[have + add] = '\0';
	return size * n;
}

static void check_curl_fetch(const char *url, const char *cafile)
{
	char errbuf[CURL_ERROR_SIZE] = "", body[4096] = "";
	long status = 0;
	CURLcode rc;
	CURL *curl;

	curl = curl_easy_init();
	if (!curl) {
		check(0, "curl fetch", "curl_easy_init returned NULL");
		return;
	}
	curl_easy_setopt(curl, CURLOPT_URL, url);
	curl_easy_setopt(curl, CURLOPT_ERRORBUFFER, errbuf);
	curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, body_append);
	curl_easy_setopt(curl, CURLOPT_WRITEDATA, (void *)body);
	curl_easy_setopt(curl, CURLOPT_TIMEOUT, 20L);
	curl_easy_setopt(curl, CURLOPT_NOPROXY, "*");
	if (cafile)
		curl_easy_setopt(curl, CURLOPT_CAINFO, cafile);
	rc = curl_easy_perform(curl);
	curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &status);
	check(rc == CURLE_OK && status == 200 && strstr(body, "libcheck-ok"), "curl fetch",
	      "%s: %s (status %ld)", url, errbuf[0] ? errbuf : curl_easy_strerror(rc), status);
	curl_easy_cleanup(curl);
}

static int remove_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	return remove(path);
}

static void check_git(void)
{
	const char hello_oid[] = "ce013625030ba8dba906f756967f9e9ca394464a"; /* "hello\n" */
	char dir[] = "libcheck-git.XXXXXX", oidstr[GIT_OID_HEXSZ + 1] = "";
	git_repository *repo = NULL;
	int major, minor, rev, features;
	git_oid oid;

	check(git_libgit2_init() >= 1, "libgit2 init", "%s",
	      git_error_last() ? git_error_last()->message : "no error");
	git_libgit2_version(&major, &minor, &rev);
	features = git_libgit2_features();
	printf("  libgit2 %d.%d.%d, features 0x%x\n", major, minor, rev, features);
	check(features & GIT_FEATURE_HTTPS, "libgit2 https", "no HTTPS");
	check(!(features & GIT_FEATURE_SSH), "libgit2 no ssh", "built with SSH");
	check(features & GIT_FEATURE_THREADS, "libgit2 threads", "built without threads");

	if (mkdtemp(dir) == NULL) {
		check(0, "libgit2 blob", "mkdtemp %s: %m", dir);
		return;
	}
	if (git_repository_init(&repo, dir, 0) == 0 &&
	    git_blob_create_from_buffer(&oid, repo, "hello\n", 6) == 0)
		git_oid_tostr(oidstr, sizeof(oidstr), &oid);
	check(strcmp(oidstr, hello_oid) == 0, "libgit2 blob", "got '%s': %s", oidstr,
	      git_error_last() ? git_error_last()->message : "no error");
	git_repository_free(repo);
	nftw(dir, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
	git_libgit2_shutdown();
}

static void check_sodium(void)
{
	unsigned char apk[crypto_box_PUBLICKEYBYTES], ask[crypto_box_SECRETKEYBYTES];
	unsigned char bpk[crypto_box_PUBLICKEYBYTES], bsk[crypto_box_SECRETKEYBYTES];
	unsigned char nonce[crypto_box_NONCEBYTES], buf[32], zero[32] = {0};
	const unsigned char msg[] = "static";
	unsigned char sealed[sizeof(msg) + crypto_box_MACBYTES], opened[sizeof(msg)];

	check(sodium_init() >= 0, "libsodium init", "sodium_init failed");
	randombytes_buf(buf, sizeof(buf));
	check(memcmp(buf, zero, sizeof(buf)) != 0, "libsodium random", "32 zero bytes");
	crypto_box_keypair(apk, ask);
	crypto_box_keypair(bpk, bsk);
	randombytes_buf(nonce, sizeof(nonce));
	check(crypto_box_easy(sealed, msg, sizeof(msg), nonce, bpk, ask) == 0 &&
	          crypto_box_open_easy(opened, sealed, sizeof(sealed), nonce, apk, bsk) == 0 &&
	          memcmp(opened, msg, sizeof(msg)) == 0,
	      "libsodium box", "crypto_box round trip failed");
	sealed[0] ^= 1;
	check(crypto_box_open_easy(opened, sealed, sizeof(sealed), nonce, apk, bsk) != 0,
	      "libsodium box forgery", "a modified box opened");
	printf("  libsodium %s\n", sodium_version_string());
}

static void check_zlib(void)
{
	const char text[] = "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa";
	unsigned char packed[128], unpacked[sizeof(text)];
	uLongf plen = sizeof(packed), ulen = sizeof(unpacked);

	check(compress(packed, &plen, (const Bytef *)text, sizeof(text)) == Z_OK &&
	          plen < sizeof(text) && uncompress(unpacked, &ulen, packed, plen) == Z_OK &&
	          ulen == sizeof(text) && memcmp(unpacked, text, sizeof(text)) == 0,
	      "zlib round trip", "compress/uncompress failed");
}

int main(int argc, char **argv)
{
	check_yaml();
	check_json();
	check_zlib();
	check_curl_build();
	if (argc > 1)
		check_curl_fetch(argv[1], argc > 2 ? argv[2] : NULL);
	check_git();
	check_sodium();
	curl_global_cleanup();
	printf("libcheck: %s\n", failures ? "FAILED" : "all checks passed");
	return failures ? 1 : 0;
}
