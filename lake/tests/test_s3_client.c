/*
 * test_s3_client.c: the S3 client's parts that need no server: locations,
 * URLs, configuration from the environment, XML answers, error messages,
 * and retries and interrupts against a port where nothing listens. The
 * operations against a real server are in lake/tests/s3/ (make test-s3).
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>

#include "io/s3_internal.h"
#include "test.h"

TEST(s3_parse_uri_splits_bucket_and_key)
{
	tl_error err;
	tl_error_clear(&err);
	char *bucket, *key;
	CHECK_OK(tl_s3_parse_uri("s3://lake/db/t/data/a.parquet", &bucket, &key, &err), &err);
	CHECK_STR(bucket, "lake");
	CHECK_STR(key, "db/t/data/a.parquet");
	free(bucket);
	free(key);
	CHECK_OK(tl_s3_parse_uri("s3a://lake", &bucket, &key, &err), &err);
	CHECK_STR(bucket, "lake");
	CHECK_STR(key, "");
	free(bucket);
	free(key);
	CHECK(tl_s3_parse_uri("file:///tmp/x", &bucket, &key, &err) < 0);
	CHECK_INT(err.code, TL_ERR_INVALID);
	CHECK(strstr(err.message, "file:///tmp/x") != NULL);
	tl_error_clear(&err);
	CHECK(tl_s3_parse_uri("s3:///key", &bucket, &key, &err) < 0);
}

static char *url_for(const char *endpoint, tl_s3_addressing addressing, const char *region, const char *bucket,
                     const char *key, const char *query)
{
	tl_s3_config cfg;
	tl_s3_config_init(&cfg);
	cfg.endpoint = endpoint;
	cfg.addressing = addressing;
	cfg.region = region;
	tl_s3_endpoint ep;
	tl_error err;
	tl_error_clear(&err);
	if (tl_s3_endpoint_parse(&cfg, &ep, &err) < 0)
		return strdup(err.message);
	char *url = tl_s3_url(&ep, bucket, key, query);
	tl_s3_endpoint_free(&ep);
	return url;
}

#define CHECK_URL(expected, ...)                                                \
	do {                                                                        \
		char *u_ = url_for(__VA_ARGS__);                                        \
		int same_ = strcmp(u_, expected) == 0;                                  \
		if (!same_)                                                             \
			tl_test_fail(__FILE__, __LINE__, "url \"%s\" != \"%s\"", u_, expected); \
		free(u_);                                                               \
		if (!same_)                                                             \
			return;                                                             \
	} while (0)

TEST(s3_url_addressing_and_encoding)
{
	/* An endpoint means path-style unless told otherwise. */
	CHECK_URL("http://127.0.0.1:9000/b/dir/a%20b%2Bc%3D.parquet", "http://127.0.0.1:9000/",
	          TL_S3_ADDRESSING_AUTO, NULL, "b", "dir/a b+c=.parquet", NULL);
	CHECK_URL("http://127.0.0.1:9000/b?list-type=2&prefix=x%2F", "http://127.0.0.1:9000",
	          TL_S3_ADDRESSING_AUTO, NULL, "b", "", "list-type=2&prefix=x%2F");
	CHECK_URL("http://minio.local/b.example/k", "http://minio.local", TL_S3_VIRTUAL_HOSTED, NULL, "b.example",
	          "k", NULL);
	CHECK_URL("http://b.minio.local/k", "http://minio.local", TL_S3_VIRTUAL_HOSTED, NULL, "b", "k", NULL);
	CHECK_URL("https://gw.example/s3/b/k", "https://gw.example/s3/", TL_S3_PATH_STYLE, NULL, "b", "k", NULL);
	/* No endpoint: AWS for the region, virtual-hosted. */
	CHECK_URL("https://lake.s3.eu-west-1.amazonaws.com/%C3%A9t%C3%A9/x~y", NULL, TL_S3_ADDRESSING_AUTO,
	          "eu-west-1", "lake", "été/x~y", NULL);
	CHECK_URL("https://s3.us-east-1.amazonaws.com/lake/k", NULL, TL_S3_PATH_STYLE, NULL, "lake", "k", NULL);
	CHECK_URL("S3 endpoint \"ftp://x\" is not an http:// or https:// URL", "ftp://x", TL_S3_ADDRESSING_AUTO,
	          NULL, "b", "k", NULL);
}

static void set_env(const char *name, const char *value)
{
	if (value)
		setenv(name, value, 1);
	else
		unsetenv(name);
}

static const char *const s3_env_names[] = {
	"TIERDB_S3_ENDPOINT", "TIERDB_S3_ACCESS_KEY", "TIERDB_S3_SECRET_KEY", "TIERDB_S3_REGION",
	"TIERDB_S3_ADDRESSING", "AWS_ENDPOINT_URL", "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY",
	"AWS_SESSION_TOKEN", "AWS_REGION", "AWS_DEFAULT_REGION", NULL};

/* Saves the S3 variables and clears them; restore_env puts them back. */
static char **save_env(void)
{
	char **saved = calloc(sizeof(s3_env_names) / sizeof(s3_env_names[0]), sizeof(char *));
	for (int i = 0; s3_env_names[i]; i++) {
		const char *v = getenv(s3_env_names[i]);
		saved[i] = v ? strdup(v) : NULL;
		unsetenv(s3_env_names[i]);
	}
	return saved;
}

static void restore_env(char **saved)
{
	for (int i = 0; s3_env_names[i]; i++) {
		set_env(s3_env_names[i], saved[i]);
		free(saved[i]);
	}
	free(saved);
}

static int config_case(void)
{
	tl_s3_config cfg;
	tl_error err;
	tl_error_clear(&err);
	/* The AWS names are the fallback... */
	set_env("AWS_ENDPOINT_URL", "http://aws-endpoint");
	set_env("AWS_ACCESS_KEY_ID", "aws-key");
	set_env("AWS_SECRET_ACCESS_KEY", "aws-secret");
	set_env("AWS_SESSION_TOKEN", "aws-token");
	set_env("AWS_DEFAULT_REGION", "ap-south-1");
	if (tl_s3_config_from_env(&cfg, &err) < 0 || strcmp(cfg.endpoint, "http://aws-endpoint") != 0 ||
	    strcmp(cfg.access_key, "aws-key") != 0 || strcmp(cfg.secret_key, "aws-secret") != 0 ||
	    strcmp(cfg.session_token, "aws-token") != 0 || strcmp(cfg.region, "ap-south-1") != 0 ||
	    cfg.addressing != TL_S3_ADDRESSING_AUTO)
		return __LINE__;
	set_env("AWS_REGION", "eu-north-1");
	if (tl_s3_config_from_env(&cfg, &err) < 0 || strcmp(cfg.region, "eu-north-1") != 0)
		return __LINE__;
	/* ...TierDB's own win. */
	set_env("TIERDB_S3_ENDPOINT", "http://tierdb-endpoint");
	set_env("TIERDB_S3_ACCESS_KEY", "tierdb-key");
	set_env("TIERDB_S3_SECRET_KEY", "tierdb-secret");
	set_env("TIERDB_S3_REGION", "us-west-2");
	set_env("TIERDB_S3_ADDRESSING", "virtual");
	if (tl_s3_config_from_env(&cfg, &err) < 0 || strcmp(cfg.endpoint, "http://tierdb-endpoint") != 0 ||
	    strcmp(cfg.access_key, "tierdb-key") != 0 || strcmp(cfg.secret_key, "tierdb-secret") != 0 ||
	    strcmp(cfg.region, "us-west-2") != 0 || cfg.addressing != TL_S3_VIRTUAL_HOSTED)
		return __LINE__;
	set_env("TIERDB_S3_ADDRESSING", "sideways");
	if (tl_s3_config_from_env(&cfg, &err) == 0 || strstr(err.message, "TIERDB_S3_ADDRESSING") == NULL)
		return __LINE__;
	/* A key without its secret names both variables and shows neither value. */
	unsetenv("TIERDB_S3_ADDRESSING");
	unsetenv("TIERDB_S3_SECRET_KEY");
	unsetenv("AWS_SECRET_ACCESS_KEY");
	tl_error_clear(&err);
	if (tl_s3_config_from_env(&cfg, &err) == 0 || err.code != TL_ERR_INVALID ||
	    strstr(err.message, "TIERDB_S3_ACCESS_KEY") == NULL || strstr(err.message, "AWS_SECRET_ACCESS_KEY") == NULL ||
	    strstr(err.message, "tierdb-key") != NULL)
		return __LINE__;
	return 0;
}

TEST(s3_config_from_env_prefers_tierdb_names_then_aws)
{
	char **saved = save_env();
	int line = config_case();
	restore_env(saved);
	if (line != 0)
		tl_test_fail(__FILE__, line, "configuration case failed");
}

TEST(s3_config_from_env_empty_is_anonymous_aws)
{
	char **saved = save_env();
	tl_s3_config cfg;
	tl_error err;
	tl_error_clear(&err);
	int rc = tl_s3_config_from_env(&cfg, &err);
	restore_env(saved);
	CHECK_OK(rc, &err);
	CHECK(cfg.endpoint == NULL && cfg.access_key == NULL && cfg.secret_key == NULL && cfg.region == NULL);
	CHECK_INT(cfg.max_attempts, 5);
	CHECK_INT(cfg.part_size, 8 << 20);
}

TEST(s3_xml_text_decodes_entities)
{
	const char *xml = "<R><Key>a&amp;b&lt;c&gt;&quot;&apos;&#233;&#x4e2d;</Key><KeyCount>3</KeyCount>"
	                  "<Empty></Empty><Self/></R>";
	char *key = tl_s3_xml_text(xml, strlen(xml), "Key");
	CHECK_STR(key, "a&b<c>\"'\xc3\xa9\xe4\xb8\xad");
	free(key);
	char *count = tl_s3_xml_text(xml, strlen(xml), "KeyCount");
	CHECK_STR(count, "3");
	free(count);
	char *empty = tl_s3_xml_text(xml, strlen(xml), "Empty");
	CHECK_STR(empty, "");
	free(empty);
	CHECK(tl_s3_xml_text(xml, strlen(xml), "Self") == NULL);
	CHECK(tl_s3_xml_text(NULL, 0, "Key") == NULL);
	/* An unknown entity stays as it is. */
	const char *odd = "<Key>&nope;&#xZZ;</Key>";
	char *k = tl_s3_xml_text(odd, strlen(odd), "Key");
	CHECK_STR(k, "&nope;&#xZZ;");
	free(k);
}

TEST(s3_xml_next_walks_repeated_elements)
{
	const char *xml = "<L><Contents><Key>a</Key></Contents><Contents><Key>b</Key></Contents></L>";
	size_t pos = 0, len;
	const char *inner;
	int n = 0;
	while (tl_s3_xml_next(xml, strlen(xml), "Contents", &pos, &inner, &len)) {
		char *key = tl_s3_xml_text(inner, len, "Key");
		CHECK_STR(key, n == 0 ? "a" : "b");
		free(key);
		n++;
	}
	CHECK_INT(n, 2);
}

static void error_for(tl_error *err, long status, const char *body, const char *bucket_region)
{
	tl_error_clear(err);
	tl_s3_response_error resp = {status, body, body ? strlen(body) : 0, bucket_region, "us-east-1", 1};
	CHECK_INT(tl_s3_http_error(err, "GET", "lake", "t/data/a.parquet", &resp), -1);
}

TEST(s3_list_times_parse_as_utc_milliseconds)
{
	CHECK_INT(tl_s3_parse_time_ms("1970-01-01T00:00:00.000Z"), 0);
	CHECK_INT(tl_s3_parse_time_ms("2024-05-01T12:30:05.123Z"), 1714566605123LL);
	CHECK_INT(tl_s3_parse_time_ms("2024-05-01T12:30:05Z"), 1714566605000LL);
	CHECK_INT(tl_s3_parse_time_ms("2024-05-01T12:30:05.1Z"), 1714566605100LL);
	CHECK_INT(tl_s3_parse_time_ms("2024-05-01T12:30:05.123456Z"), 1714566605123LL);
	/* anything else is unknown (0), which callers acting on age treat as too young */
	CHECK_INT(tl_s3_parse_time_ms(NULL), 0);
	CHECK_INT(tl_s3_parse_time_ms("2024-05-01 12:30:05Z"), 0);
	CHECK_INT(tl_s3_parse_time_ms("2024-05-01T12:30:05+02:00"), 0);
	CHECK_INT(tl_s3_parse_time_ms("2024-13-01T12:30:05Z"), 0);
	CHECK_INT(tl_s3_parse_time_ms("2024-05-01T12:30:05.Z"), 0);
}

TEST(s3_http_errors_name_the_object_status_and_code)
{
	tl_error err;
	error_for(&err, 404, "<Error><Code>NoSuchKey</Code><Message>The specified key does not exist.</Message></Error>",
	          NULL);
	CHECK_INT(err.code, TL_ERR_NOT_FOUND);
	CHECK_STR(err.message, "S3 GET s3://lake/t/data/a.parquet: HTTP 404 NoSuchKey: The specified key does not exist.");

	error_for(&err, 403, "<Error><Code>SignatureDoesNotMatch</Code><Message>m</Message></Error>", NULL);
	CHECK_INT(err.code, TL_ERR_IO);
	CHECK_STR(err.message, "S3 GET s3://lake/t/data/a.parquet: HTTP 403 SignatureDoesNotMatch: m (check the secret key)");

	error_for(&err, 412, "<Error><Code>PreconditionFailed</Code></Error>", NULL);
	CHECK_INT(err.code, TL_ERR_CONFLICT);

	/* A HEAD has no body: the status speaks. */
	error_for(&err, 403, NULL, NULL);
	CHECK_STR(err.message,
	          "S3 GET s3://lake/t/data/a.parquet: HTTP 403 Forbidden (check the access key, the secret and the region)");
}

TEST(s3_http_errors_name_the_region_the_server_says)
{
	tl_error err;
	/* A request signed for the wrong region (AWS: 400 with the right one). */
	error_for(&err, 400,
	          "<Error><Code>AuthorizationHeaderMalformed</Code><Message>the region 'us-east-1' is wrong; expecting "
	          "'eu-west-1'</Message><Region>eu-west-1</Region></Error>",
	          NULL);
	CHECK(strstr(err.message, "HTTP 400 AuthorizationHeaderMalformed") != NULL);
	CHECK(strstr(err.message, "the bucket is in region eu-west-1, not us-east-1 (set TIERDB_S3_REGION)") != NULL);
	/* A bucket elsewhere (AWS: 301 with x-amz-bucket-region). */
	error_for(&err, 301, "<Error><Code>PermanentRedirect</Code><Message>use the endpoint</Message></Error>",
	          "ap-northeast-1");
	CHECK(strstr(err.message, "HTTP 301 PermanentRedirect") != NULL);
	CHECK(strstr(err.message, "the bucket is in region ap-northeast-1, not us-east-1") != NULL);
	error_for(&err, 301, NULL, "ap-northeast-1");
	CHECK(strstr(err.message, "HTTP 301 Moved Permanently; the bucket is in region ap-northeast-1") != NULL);
	/* The same region is no news. */
	error_for(&err, 403, NULL, "us-east-1");
	CHECK(strstr(err.message, "region us-east-1, not") == NULL);
}

/*
 * A configuration for a port where nothing listens (bound, not listening,
 * so connects are refused until *fd is closed), retrying after 1 ms.
 */
static int refusing_config(tl_s3_config *cfg, char *endpoint, size_t cap, int *fd)
{
	*fd = socket(AF_INET, SOCK_STREAM, 0);
	struct sockaddr_in addr = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	socklen_t len = sizeof(addr);
	if (*fd < 0 || bind(*fd, (struct sockaddr *)&addr, sizeof(addr)) != 0 ||
	    getsockname(*fd, (struct sockaddr *)&addr, &len) != 0)
		return -1;
	snprintf(endpoint, cap, "http://127.0.0.1:%d", ntohs(addr.sin_port));
	tl_s3_config_init(cfg);
	cfg->endpoint = endpoint;
	cfg->retry_base_ms = 1;
	return 0;
}

static int interrupt_calls;

static bool interrupt_on_second_call(void *arg)
{
	(void)arg;
	return ++interrupt_calls >= 2;
}

TEST(s3_transport_errors_are_retried_then_reported)
{
	int fd;
	char endpoint[64];
	tl_s3_config cfg;
	CHECK_INT(refusing_config(&cfg, endpoint, sizeof(endpoint), &fd), 0);
	cfg.access_key = "k";
	cfg.secret_key = "very-secret-value";
	cfg.max_attempts = 3;
	tl_error err;
	tl_error_clear(&err);
	tl_s3_client *c = tl_s3_client_new(&cfg, &err);
	CHECK(c != NULL);
	char buf[4];
	int rc = tl_s3_get_range(c, "s3://b/some/key", 0, buf, sizeof(buf), &err);
	tl_s3_client_free(c);
	close(fd);
	CHECK_INT(rc, -1);
	CHECK_INT(err.code, TL_ERR_IO);
	CHECK(strstr(err.message, "s3://b/some/key") != NULL);
	CHECK(strstr(err.message, "(after 3 attempts)") != NULL);
	CHECK(strstr(err.message, "very-secret-value") == NULL);
}

TEST(s3_interrupt_hook_stops_retrying)
{
	int fd;
	char endpoint[64];
	tl_s3_config cfg;
	CHECK_INT(refusing_config(&cfg, endpoint, sizeof(endpoint), &fd), 0);
	cfg.max_attempts = 50;
	cfg.interrupted = interrupt_on_second_call;
	interrupt_calls = 0;
	tl_error err;
	tl_error_clear(&err);
	tl_s3_client *c = tl_s3_client_new(&cfg, &err);
	CHECK(c != NULL);
	int rc = tl_s3_delete(c, "s3://b/k", &err);
	tl_s3_client_free(c);
	close(fd);
	CHECK_INT(rc, -1);
	CHECK_INT(err.code, TL_ERR_INTERRUPTED);
	CHECK_STR(err.message, "interrupted");
	CHECK(interrupt_calls < 10);
}

/* Without a hook of its own, the client asks the host's check (tierlake/env.h). */
TEST(s3_falls_back_to_the_host_interrupt_check)
{
	int fd;
	char endpoint[64];
	tl_s3_config cfg;
	CHECK_INT(refusing_config(&cfg, endpoint, sizeof(endpoint), &fd), 0);
	cfg.max_attempts = 50;
	interrupt_calls = 0;
	tl_set_interrupt_check(interrupt_on_second_call, NULL);
	tl_error err;
	tl_error_clear(&err);
	tl_s3_client *c = tl_s3_client_new(&cfg, &err);
	int rc = c != NULL ? tl_s3_delete(c, "s3://b/k", &err) : -2;
	tl_s3_client_free(c);
	tl_set_interrupt_check(NULL, NULL);
	close(fd);
	CHECK_INT(rc, -1);
	CHECK_INT(err.code, TL_ERR_INTERRUPTED);
	CHECK(interrupt_calls < 10);
}

TEST(s3_client_refuses_bad_configuration)
{
	tl_s3_config cfg;
	tl_s3_config_init(&cfg);
	tl_error err;
	tl_error_clear(&err);
	cfg.part_size = 1 << 20;
	CHECK(tl_s3_client_new(&cfg, &err) == NULL);
	CHECK(strstr(err.message, "5 MiB") != NULL);
	tl_s3_config_init(&cfg);
	cfg.access_key = "only-a-key";
	tl_error_clear(&err);
	CHECK(tl_s3_client_new(&cfg, &err) == NULL);
	CHECK_INT(err.code, TL_ERR_INVALID);
	tl_s3_config_init(&cfg);
	cfg.endpoint = "127.0.0.1:9000";
	tl_error_clear(&err);
	CHECK(tl_s3_client_new(&cfg, &err) == NULL);
	CHECK(strstr(err.message, "127.0.0.1:9000") != NULL);
	tl_error_clear(&err);
	CHECK(tl_s3_output_create(&cfg, "s3://bucket-only", false, &err) == NULL);
	CHECK(strstr(err.message, "names a bucket") != NULL);
}
