/*
 * s3_text.c: the text S3 requests and responses are made of: endpoints,
 * URLs with SigV4's encoding, the few XML elements S3 answers with, and the
 * error message a failed response becomes.
 *
 * S3's XML is flat and machine-written, so a search for "<Tag>" and its
 * closing tag is enough: no element the client reads nests inside one of
 * the same name, and entities are decoded.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tierlake/calendar.h"
#include "io/s3_internal.h"

static bool is_unreserved(unsigned char c)
{
	return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' ||
	       c == '.' || c == '_' || c == '~';
}

void tl_s3_uri_encode(tl_buf *out, const char *s, bool keep_slash)
{
	static const char hex[] = "0123456789ABCDEF";
	for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
		if (is_unreserved(*p) || (keep_slash && *p == '/')) {
			tl_buf_append_byte(out, *p);
		} else {
			char esc[3] = {'%', hex[*p >> 4], hex[*p & 15]};
			tl_buf_append(out, esc, 3);
		}
	}
}

/* The buffer's text as a new string, or NULL when a growth failed (a truncated URL must never be sent). */
static char *take_string(tl_buf *b)
{
	tl_buf_append_byte(b, 0);
	if (tl_buf_failed(b)) {
		tl_buf_free(b);
		return NULL;
	}
	return (char *)b->data;
}

int tl_s3_endpoint_parse(const tl_s3_config *cfg, tl_s3_endpoint *ep, tl_error *err)
{
	memset(ep, 0, sizeof(*ep));
	char aws[128];
	const char *url = cfg->endpoint;
	if (url == NULL || url[0] == '\0') {
		snprintf(aws, sizeof(aws), "https://s3.%s.amazonaws.com", cfg->region ? cfg->region : "us-east-1");
		url = aws;
	}
	const char *sep = strstr(url, "://");
	if (sep == NULL || !((sep - url == 4 && strncmp(url, "http", 4) == 0) ||
	                     (sep - url == 5 && strncmp(url, "https", 5) == 0)))
		return tl_error_set(err, TL_ERR_INVALID, "S3 endpoint \"%s\" is not an http:// or https:// URL", url);
	const char *host = sep + 3;
	size_t host_len = strcspn(host, "/?#");
	if (host_len == 0 || host[host_len] == '?' || host[host_len] == '#')
		return tl_error_set(err, TL_ERR_INVALID, "S3 endpoint \"%s\" must be scheme://host[:port][/path]", url);
	const char *path = host + host_len;
	size_t path_len = strlen(path);
	while (path_len > 0 && path[path_len - 1] == '/')
		path_len--;
	ep->scheme = tl_strndup(url, (size_t)(sep - url));
	ep->host = tl_strndup(host, host_len);
	ep->path = tl_strndup(path, path_len);
	if (ep->scheme == NULL || ep->host == NULL || ep->path == NULL) {
		tl_s3_endpoint_free(ep);
		return tl_error_set(err, TL_ERR_NOMEM, "out of memory parsing the S3 endpoint");
	}
	switch (cfg->addressing) {
	case TL_S3_PATH_STYLE: ep->path_style = true; break;
	case TL_S3_VIRTUAL_HOSTED: ep->path_style = false; break;
	case TL_S3_ADDRESSING_AUTO: ep->path_style = url != aws; break;
	}
	return 0;
}

void tl_s3_endpoint_free(tl_s3_endpoint *ep)
{
	tl_free(ep->scheme);
	tl_free(ep->host);
	tl_free(ep->path);
	memset(ep, 0, sizeof(*ep));
}

char *tl_s3_url(const tl_s3_endpoint *ep, const char *bucket, const char *key, const char *query)
{
	tl_buf b;
	tl_buf_init(&b);
	/* A bucket with a dot breaks TLS names as a host label, so it goes in the path. */
	bool in_path = ep->path_style || strchr(bucket, '.') != NULL;
	if (in_path)
		tl_buf_printf(&b, "%s://%s%s/", ep->scheme, ep->host, ep->path);
	else
		tl_buf_printf(&b, "%s://%s.%s%s/", ep->scheme, bucket, ep->host, ep->path);
	if (in_path) {
		tl_s3_uri_encode(&b, bucket, false);
		if (key[0] != '\0')
			tl_buf_append_byte(&b, '/');
	}
	tl_s3_uri_encode(&b, key, true);
	if (query != NULL && query[0] != '\0')
		tl_buf_printf(&b, "?%s", query);
	return take_string(&b);
}

static bool find_element(const char *xml, size_t len, const char *tag, size_t *pos, const char **inner,
                         size_t *inner_len, size_t *end)
{
	char open[64], close[64];
	int no = snprintf(open, sizeof(open), "<%s>", tag);
	int nc = snprintf(close, sizeof(close), "</%s>", tag);
	if (no <= 0 || nc <= 0 || (size_t)nc >= sizeof(close))
		return false;
	const char *start = memmem(xml + *pos, len - *pos, open, (size_t)no);
	if (start == NULL)
		return false;
	const char *body = start + no;
	const char *stop = memmem(body, (size_t)(xml + len - body), close, (size_t)nc);
	if (stop == NULL)
		return false;
	*inner = body;
	*inner_len = (size_t)(stop - body);
	*end = (size_t)(stop - xml) + (size_t)nc;
	return true;
}

bool tl_s3_xml_next(const char *xml, size_t len, const char *tag, size_t *pos, const char **inner,
                    size_t *inner_len)
{
	size_t end;
	if (xml == NULL || *pos > len || !find_element(xml, len, tag, pos, inner, inner_len, &end))
		return false;
	*pos = end;
	return true;
}

/* Decodes one entity at p (just after '&'); returns its length up to ';', or 0 if it is none. */
static size_t decode_entity(const char *p, size_t avail, tl_buf *out)
{
	static const struct {
		const char *name;
		char c;
	} named[] = {{"lt", '<'}, {"gt", '>'}, {"amp", '&'}, {"quot", '"'}, {"apos", '\''}};
	const char *semi = memchr(p, ';', avail < 12 ? avail : 12);
	if (semi == NULL)
		return 0;
	size_t n = (size_t)(semi - p);
	for (size_t i = 0; i < sizeof(named) / sizeof(named[0]); i++) {
		if (strlen(named[i].name) == n && memcmp(p, named[i].name, n) == 0) {
			tl_buf_append_byte(out, (uint8_t)named[i].c);
			return n + 1;
		}
	}
	if (n >= 2 && p[0] == '#') {
		char digits[12] = {0};
		bool hex = p[1] == 'x' || p[1] == 'X';
		memcpy(digits, p + (hex ? 2 : 1), n - (hex ? 2 : 1));
		char *endp;
		unsigned long cp = strtoul(digits, &endp, hex ? 16 : 10);
		if (*endp != '\0' || digits[0] == '\0' || cp > 0x10FFFF)
			return 0;
		tl_buf_append_utf8(out, (uint32_t)cp);
		return n + 1;
	}
	return 0;
}

char *tl_s3_xml_text(const char *xml, size_t len, const char *tag)
{
	size_t pos = 0, inner_len;
	const char *inner;
	if (!tl_s3_xml_next(xml, len, tag, &pos, &inner, &inner_len))
		return NULL;
	tl_buf b;
	tl_buf_init(&b);
	for (size_t i = 0; i < inner_len; i++) {
		size_t used = inner[i] == '&' ? decode_entity(inner + i + 1, inner_len - i - 1, &b) : 0;
		if (used > 0)
			i += used;
		else
			tl_buf_append_byte(&b, (uint8_t)inner[i]);
	}
	return take_string(&b);
}

static tl_error_code code_for_status(long status)
{
	if (status == 404)
		return TL_ERR_NOT_FOUND;
	if (status == 412)
		return TL_ERR_CONFLICT;
	return TL_ERR_IO;
}

/* When the status alone has to speak (a HEAD carries no body). */
static const char *status_text(long status)
{
	switch (status) {
	case 301: return "Moved Permanently";
	case 400: return "Bad Request";
	case 403: return "Forbidden";
	case 404: return "Not Found";
	case 412: return "Precondition Failed";
	case 416: return "Requested Range Not Satisfiable";
	case 429: return "Too Many Requests";
	case 500: return "Internal Server Error";
	case 503: return "Service Unavailable";
	default: return "error";
	}
}

/* What the user can do about it, for the errors with a usual cause. */
static const char *hint_for(const char *code, long status)
{
	if (code == NULL)
		return status == 403 ? " (check the access key, the secret and the region)" : "";
	if (strcmp(code, "SignatureDoesNotMatch") == 0)
		return " (check the secret key)";
	if (strcmp(code, "InvalidAccessKeyId") == 0)
		return " (check the access key)";
	if (strcmp(code, "NoSuchBucket") == 0)
		return " (check the bucket name and the endpoint)";
	return "";
}

int tl_s3_http_error(tl_error *err, const char *op, const char *bucket, const char *key,
                     const tl_s3_response_error *resp)
{
	char *code = tl_s3_xml_text(resp->body, resp->body_len, "Code");
	char *message = tl_s3_xml_text(resp->body, resp->body_len, "Message");
	char *region = tl_s3_xml_text(resp->body, resp->body_len, "Region");
	const char *where = region ? region : resp->bucket_region;
	char region_note[160] = "";
	if (where != NULL && where[0] != '\0' &&
	    (resp->request_region == NULL || strcmp(where, resp->request_region) != 0))
		snprintf(region_note, sizeof(region_note), "; the bucket is in region %s, not %s (set TIERDB_S3_REGION)",
		         where, resp->request_region ? resp->request_region : "(none)");
	char attempts[48] = "";
	if (resp->attempts > 1)
		snprintf(attempts, sizeof(attempts), " (after %d attempts)", resp->attempts);
	tl_error_set(err, code_for_status(resp->status), "S3 %s s3://%s/%s: HTTP %ld %s%s%s%s%s%s", op, bucket, key,
	             resp->status, code ? code : status_text(resp->status), message ? ": " : "",
	             message ? message : "", hint_for(code, resp->status), region_note, attempts);
	tl_free(code);
	tl_free(message);
	tl_free(region);
	return -1;
}

/* Reads exactly n digits at *p into *out; false when they are not all digits. */
static bool read_digits(const char **p, int n, int *out)
{
	int v = 0;
	for (int i = 0; i < n; i++) {
		char c = (*p)[i];
		if (c < '0' || c > '9')
			return false;
		v = v * 10 + (c - '0');
	}
	*p += n;
	*out = v;
	return true;
}

static bool expect(const char **p, char c)
{
	if (**p != c)
		return false;
	(*p)++;
	return true;
}

int64_t tl_s3_parse_time_ms(const char *text)
{
	const char *p = text;
	int year, month, day, hour, minute, second, ms = 0;
	if (p == NULL || !read_digits(&p, 4, &year) || !expect(&p, '-') || !read_digits(&p, 2, &month) ||
	    !expect(&p, '-') || !read_digits(&p, 2, &day) || !expect(&p, 'T') || !read_digits(&p, 2, &hour) ||
	    !expect(&p, ':') || !read_digits(&p, 2, &minute) || !expect(&p, ':') || !read_digits(&p, 2, &second))
		return 0;
	if (*p == '.') {
		/* Milliseconds from the first three digits of the fraction, whatever its length. */
		p++;
		int digits = 0;
		for (; *p >= '0' && *p <= '9'; p++, digits++)
			if (digits < 3)
				ms = ms * 10 + (*p - '0');
		if (digits == 0)
			return 0;
		for (; digits < 3; digits++)
			ms *= 10;
	}
	if (strcmp(p, "Z") != 0 || month < 1 || month > 12 || day < 1 || day > 31 || hour > 23 || minute > 59 ||
	    second > 60)
		return 0;
	int64_t days = tl_days_from_civil(year, month, day);
	return ((days * 24 + hour) * 60 + minute) * 60000 + (int64_t)second * 1000 + ms;
}
