/*
 * profile.c: storage profiles as storages (see profile.h).
 *
 * A profile's storage wraps the S3 storage made for it, only to put the
 * profile and its credentials reference in front of every error: a 403
 * from the store then says which profile's credentials were refused, which
 * the S3 layer cannot know. A profile that cannot be configured gets the
 * same wrapper with no S3 storage inside, failing with the saved reason:
 * registering it anyway makes its tables fail with that reason rather
 * than fall through to the environment's S3 storage (which would read the
 * wrong bucket as the wrong user, or fail with a message that does not
 * mention the profile).
 */
#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "tierlake/buf.h"
#include "tierlake/profile.h"
#include "tierlake/s3.h"
#include "common/json_load.h"

/* ------------------------------------------------------------ validation */

int tl_profile_check_warehouse(const char *warehouse, bool *is_s3, tl_error *err)
{
	bool s3 = strncmp(warehouse, "s3://", 5) == 0 || strncmp(warehouse, "s3a://", 6) == 0;
	if (is_s3)
		*is_s3 = s3;
	if (s3) {
		const char *bucket = warehouse + (warehouse[2] == 'a' ? 6 : 5);
		size_t blen = strcspn(bucket, "/");
		if (blen == 0)
			return tl_error_set(err, TL_ERR_INVALID, "warehouse '%s' names no bucket: write s3://bucket[/prefix]",
			                    warehouse);
		for (const char *p = bucket; *p; p++)
			if (isspace((unsigned char)*p) || *p == '?' || *p == '#')
				return tl_error_set(err, TL_ERR_INVALID,
				                    "warehouse '%s' has a space, '?' or '#': write s3://bucket[/prefix]", warehouse);
		if (strstr(bucket, "//") != NULL || warehouse[strlen(warehouse) - 1] == '/')
			return tl_error_set(err, TL_ERR_INVALID,
			                    "warehouse '%s' has an empty path segment: write s3://bucket[/prefix] without a "
			                    "trailing '/'",
			                    warehouse);
		return 0;
	}
	if (warehouse[0] == '/' || strncmp(warehouse, "file:/", 6) == 0)
		return 0;
	return tl_error_set(err, TL_ERR_INVALID,
	                    "warehouse '%s' is neither an absolute local path, a file:// URI nor s3://bucket[/prefix]",
	                    warehouse);
}

bool tl_profile_ref_valid(const char *ref)
{
	if (ref == NULL || ref[0] == '\0')
		return false;
	for (const char *p = ref; *p; p++)
		if (!(isalnum((unsigned char)*p) || *p == '_'))
			return false;
	return true;
}

/* The lake_config keys: the only ones a profile may set. */
static const char *const config_keys[] = {"endpoint", "region", "addressing", NULL};

static int check_config_json(const json_t *obj, tl_error *err)
{
	if (!json_is_object(obj))
		return tl_error_set(err, TL_ERR_INVALID, "lake_config is not a JSON object");
	const char *key;
	json_t *value;
	json_object_foreach((json_t *)obj, key, value) {
		bool known = false;
		for (int i = 0; config_keys[i]; i++)
			known = known || strcmp(key, config_keys[i]) == 0;
		if (!known)
			return tl_error_set(err, TL_ERR_INVALID,
			                    "unknown storage profile setting '%s': the settings are endpoint, region and "
			                    "addressing (path or virtual)",
			                    key);
		const char *s = json_string_value(value);
		if (s == NULL || s[0] == '\0')
			return tl_error_set(err, TL_ERR_INVALID, "storage profile setting '%s' needs a non-empty text value",
			                    key);
		if (strcmp(key, "addressing") == 0 && strcmp(s, "path") != 0 && strcmp(s, "virtual") != 0)
			return tl_error_set(err, TL_ERR_INVALID, "addressing is '%s': use path or virtual", s);
		if (strcmp(key, "endpoint") == 0 && strncmp(s, "http://", 7) != 0 && strncmp(s, "https://", 8) != 0)
			return tl_error_set(err, TL_ERR_INVALID, "endpoint '%s' is not an http:// or https:// URL", s);
	}
	return 0;
}

static json_t *load_config(const char *lake_config, tl_error *err)
{
	json_error_t jerr;
	json_t *obj = tl_json_loadb(lake_config && lake_config[0] ? lake_config : "{}", lake_config && lake_config[0] ? strlen(lake_config) : 2, 0, &jerr);
	if (obj == NULL) {
		tl_error_set(err, TL_ERR_INVALID, "lake_config is not JSON: %s", jerr.text);
		return NULL;
	}
	if (check_config_json(obj, err) < 0) {
		json_decref(obj);
		return NULL;
	}
	return obj;
}

int tl_profile_check_config(const char *lake_config, tl_error *err)
{
	json_t *obj = load_config(lake_config, err);
	json_decref(obj);
	return obj ? 0 : -1;
}

/* ------------------------------------------------------------ credentials */

typedef struct credentials {
	char *access_key;
	char *secret_key;
	char *session_token;
} credentials;

static void credentials_free(credentials *c)
{
	/* Secrets do not linger in freed memory. */
	char *fields[] = {c->access_key, c->secret_key, c->session_token};
	for (int i = 0; i < 3; i++)
		if (fields[i]) {
			memset(fields[i], 0, strlen(fields[i]));
			tl_free(fields[i]);
		}
	memset(c, 0, sizeof(*c));
}

/* A copy of s[0..n) without surrounding blanks; NULL when out of memory. */
static char *trimmed(const char *s, size_t n)
{
	while (n > 0 && isspace((unsigned char)*s))
		s++, n--;
	while (n > 0 && isspace((unsigned char)s[n - 1]))
		n--;
	char *out = tl_malloc(n + 1);
	if (out == NULL)
		return NULL;
	memcpy(out, s, n);
	out[n] = '\0';
	return out;
}

/*
 * Whether an unknown key may be echoed: a secret can contain '=', so the
 * text before one is shown only when it looks like a key name (short,
 * lower case and '_'), which no access key or secret does.
 */
static bool looks_like_key(const char *key)
{
	size_t n = strlen(key);
	if (n == 0 || n > 32)
		return false;
	for (const char *p = key; *p; p++)
		if (!((*p >= 'a' && *p <= 'z') || *p == '_'))
			return false;
	return true;
}

static int parse_credentials(const char *text, const char *what, credentials *out, tl_error *err)
{
	memset(out, 0, sizeof(*out));
	int item = 0;
	for (const char *p = text; *p;) {
		size_t n = strcspn(p, ";");
		char *it = trimmed(p, n);
		p += n + (p[n] == ';');
		item++;
		if (it == NULL) {
			credentials_free(out);
			return tl_error_nomem(err, "reading credentials");
		}
		if (it[0] == '\0') {
			tl_free(it);
			continue;
		}
		char *eq = strchr(it, '=');
		int rc = 0;
		if (eq == NULL) {
			/* The item may be a secret written without its key: never echo it. */
			rc = tl_error_set(err, TL_ERR_INVALID,
			                  "%s: item %d has no '=': write access_key_id=...;secret_access_key=...", what, item);
		} else {
			*eq = '\0';
			char *key = trimmed(it, strlen(it)), *value = trimmed(eq + 1, strlen(eq + 1));
			char **slot = key == NULL || value == NULL ? NULL
			              : strcmp(key, "access_key_id") == 0       ? &out->access_key
			              : strcmp(key, "secret_access_key") == 0 ? &out->secret_key
			              : strcmp(key, "session_token") == 0     ? &out->session_token
			                                                      : NULL;
			if (key == NULL || value == NULL)
				rc = tl_error_nomem(err, "reading credentials");
			else if (slot == NULL && looks_like_key(key))
				rc = tl_error_set(err, TL_ERR_INVALID,
				                  "%s: unknown key '%s': the keys are access_key_id, secret_access_key and "
				                  "session_token",
				                  what, key);
			else if (slot == NULL)
				rc = tl_error_set(err, TL_ERR_INVALID,
				                  "%s: item %d has an unknown key: the keys are access_key_id, secret_access_key "
				                  "and session_token",
				                  what, item);
			else if (*slot != NULL)
				rc = tl_error_set(err, TL_ERR_INVALID, "%s: key '%s' is given twice", what, key);
			else {
				*slot = value;
				value = NULL;
			}
			tl_free(key);
			if (value) {
				memset(value, 0, strlen(value));
				tl_free(value);
			}
		}
		memset(it, 0, strlen(it));
		tl_free(it);
		if (rc < 0) {
			credentials_free(out);
			return -1;
		}
	}
	const char *missing = out->access_key == NULL || out->access_key[0] == '\0'   ? "access_key_id"
	                      : out->secret_key == NULL || out->secret_key[0] == '\0' ? "secret_access_key"
	                                                                              : NULL;
	if (missing) {
		credentials_free(out);
		return tl_error_set(err, TL_ERR_INVALID,
		                    "%s has no %s: write access_key_id=...;secret_access_key=...[;session_token=...]", what,
		                    missing);
	}
	return 0;
}

int tl_profile_check_credentials(const char *text, const char *what, tl_error *err)
{
	credentials c;
	if (parse_credentials(text, what, &c, err) < 0)
		return -1;
	credentials_free(&c);
	return 0;
}

int tl_profile_credentials_lookup(const char *file_text, const char *ref, const char *file, char **value,
                                  tl_error *err)
{
	*value = NULL;
	size_t plen = strlen(TL_CREDENTIALS_ENV_PREFIX), rlen = strlen(ref);
	int line = 0;
	for (const char *p = file_text; *p;) {
		size_t n = strcspn(p, "\n");
		const char *s = p, *end = p + n;
		p = *end ? end + 1 : end;
		line++;
		while (s < end && isspace((unsigned char)*s))
			s++;
		if (s == end || *s == '#')
			continue;
		if ((size_t)(end - s) > 7 && strncmp(s, "export ", 7) == 0)
			for (s += 7; s < end && isspace((unsigned char)*s);)
				s++;
		const char *eq = memchr(s, '=', (size_t)(end - s));
		if (eq == NULL || (size_t)(eq - s) <= plen || strncmp(s, TL_CREDENTIALS_ENV_PREFIX, plen) != 0) {
			if (*value) {
				memset(*value, 0, strlen(*value));
				tl_free(*value);
				*value = NULL;
			}
			return tl_error_set(err, TL_ERR_INVALID,
			                    "credentials file %s, line %d: expected TIERDB_CREDENTIALS_<REF>=access_key_id=..."
			                    ";secret_access_key=..., a '#' comment or a blank line",
			                    file, line);
		}
		if ((size_t)(eq - s) == plen + rlen && strncmp(s + plen, ref, rlen) == 0) {
			tl_free(*value); /* the last line for a reference wins, as in a shell */
			*value = trimmed(eq + 1, (size_t)(end - eq - 1));
			if (*value == NULL)
				return tl_error_nomem(err, "reading credentials file %s", file);
		}
	}
	return *value != NULL;
}

/* ------------------------------------------------------------ the storage */

typedef struct profile_storage {
	tl_storage base;
	tl_storage *s3;      /* NULL: the profile cannot be served, `failure` says why */
	tl_error failure;
	char context[256];   /* "storage profile 'P' (credentials REF)" */
} profile_storage;

typedef struct profile_input {
	tl_input base;
	tl_input *inner;
	const char *context;
} profile_input;

typedef struct profile_output {
	tl_output base;
	tl_output *inner;
	const char *context;
} profile_output;

static int fail(const profile_storage *ps, tl_error *err)
{
	if (err != NULL && err->code == TL_OK)
		*err = ps->failure;
	return -1;
}

/* Puts the profile in front of an error from the S3 storage; returns rc. */
static int annotated(const char *context, int rc, tl_error *err)
{
	if (rc < 0)
		tl_error_prefix(err, "%s", context);
	return rc;
}

static int in_read_at(tl_input *in, uint64_t offset, void *buf, size_t len, tl_error *err)
{
	profile_input *pi = (profile_input *)in;
	return annotated(pi->context, pi->inner->read_at(pi->inner, offset, buf, len, err), err);
}

static void in_close(tl_input *in)
{
	profile_input *pi = (profile_input *)in;
	tl_input_close(pi->inner);
	tl_free(pi);
}

static tl_input *ps_open_read(tl_storage *s, const char *location, tl_error *err)
{
	profile_storage *ps = s->state;
	if (ps->s3 == NULL) {
		fail(ps, err);
		return NULL;
	}
	tl_input *inner = ps->s3->open_read(ps->s3, location, err);
	if (inner == NULL) {
		annotated(ps->context, -1, err);
		return NULL;
	}
	profile_input *pi = tl_calloc(1, sizeof(*pi));
	if (pi == NULL) {
		tl_input_close(inner);
		tl_error_nomem(err, "opening %s", location);
		return NULL;
	}
	pi->inner = inner;
	pi->context = ps->context;
	pi->base.read_at = in_read_at;
	pi->base.close = in_close;
	pi->base.size = inner->size;
	pi->base.name = inner->name;
	return &pi->base;
}

static int out_write(tl_output *out, const void *buf, size_t len, tl_error *err)
{
	profile_output *po = (profile_output *)out;
	int rc = po->inner->write(po->inner, buf, len, err);
	po->base.offset = po->inner->offset;
	return annotated(po->context, rc, err);
}

static int out_finish(tl_output *out, tl_error *err)
{
	profile_output *po = (profile_output *)out;
	int rc = po->inner->finish(po->inner, err);
	po->base.offset = po->inner->offset;
	return annotated(po->context, rc, err);
}

static void out_close(tl_output *out)
{
	profile_output *po = (profile_output *)out;
	tl_output_close(po->inner);
	tl_free(po);
}

static tl_output *ps_create(tl_storage *s, const char *location, int mode, tl_error *err)
{
	profile_storage *ps = s->state;
	if (ps->s3 == NULL) {
		fail(ps, err);
		return NULL;
	}
	tl_output *inner = ps->s3->create(ps->s3, location, mode, err);
	if (inner == NULL) {
		annotated(ps->context, -1, err);
		return NULL;
	}
	profile_output *po = tl_calloc(1, sizeof(*po));
	if (po == NULL) {
		tl_output_close(inner);
		tl_error_nomem(err, "creating %s", location);
		return NULL;
	}
	po->inner = inner;
	po->context = ps->context;
	po->base.write = out_write;
	po->base.finish = out_finish;
	po->base.close = out_close;
	po->base.offset = inner->offset;
	po->base.name = inner->name;
	return &po->base;
}

/* The operations that return an int: call the S3 storage's, or fail with the saved reason. */
#define FORWARD(call)                                                                                        \
	profile_storage *ps = s->state;                                                                          \
	if (ps->s3 == NULL)                                                                                      \
		return fail(ps, err);                                                                                \
	return annotated(ps->context, ps->s3->call, err)

static int ps_create_if_absent(tl_storage *s, const char *location, const void *data, size_t len, tl_error *err)
{
	FORWARD(create_if_absent(ps->s3, location, data, len, err));
}

static int ps_replace(tl_storage *s, const char *location, const void *data, size_t len, tl_error *err)
{
	FORWARD(replace(ps->s3, location, data, len, err));
}

static int ps_list(tl_storage *s, const char *location, int flags, tl_storage_list *out, tl_error *err)
{
	FORWARD(list(ps->s3, location, flags, out, err));
}

static int ps_remove(tl_storage *s, const char *location, tl_error *err)
{
	FORWARD(remove(ps->s3, location, err));
}

static int ps_remove_all(tl_storage *s, const char *location, tl_error *err)
{
	FORWARD(remove_all(ps->s3, location, err));
}

static int ps_stat(tl_storage *s, const char *location, uint64_t *size, bool *is_dir, tl_error *err)
{
	FORWARD(stat(ps->s3, location, size, is_dir, err));
}

static int ps_make_dirs(tl_storage *s, const char *location, tl_error *err)
{
	FORWARD(make_dirs(ps->s3, location, err));
}

static char *ps_canonical(tl_storage *s, const char *location, tl_error *err)
{
	profile_storage *ps = s->state;
	if (ps->s3 == NULL) {
		fail(ps, err);
		return NULL;
	}
	char *out = ps->s3->canonical(ps->s3, location, err);
	if (out == NULL)
		annotated(ps->context, -1, err);
	return out;
}

/* The S3 configuration the profile describes; fills ps->s3 or returns -1 with err. */
static int make_s3(profile_storage *ps, const tl_profile *p, tl_error *err)
{
	json_t *config = load_config(p->lake_config, err);
	if (config == NULL)
		return -1;
	tl_s3_config cfg;
	int rc = tl_s3_config_from_env(&cfg, err);
	credentials cred;
	memset(&cred, 0, sizeof(cred));
	if (rc == 0 && p->credential_ref != NULL) {
		char var[160];
		snprintf(var, sizeof(var), TL_CREDENTIALS_ENV_PREFIX "%.100s", p->credential_ref);
		if (p->credentials_error != NULL)
			rc = tl_error_set(err, TL_ERR_INVALID, "%s", p->credentials_error);
		else if (p->credentials == NULL)
			rc = tl_error_set(err, TL_ERR_NOT_FOUND,
			                  "credentials %s are not in %s: add %s=access_key_id=...;secret_access_key=... there",
			                  p->credential_ref, p->credentials_source ? p->credentials_source : "the environment",
			                  var);
		else
			rc = parse_credentials(p->credentials, var, &cred, err);
		/* The reference replaces the environment's credentials entirely, session token included. */
		cfg.access_key = cred.access_key;
		cfg.secret_key = cred.secret_key;
		cfg.session_token = cred.session_token;
	}
	if (rc == 0) {
		const char *v;
		if ((v = json_string_value(json_object_get(config, "endpoint"))) != NULL)
			cfg.endpoint = v;
		if ((v = json_string_value(json_object_get(config, "region"))) != NULL)
			cfg.region = v;
		if ((v = json_string_value(json_object_get(config, "addressing"))) != NULL)
			cfg.addressing = strcmp(v, "path") == 0 ? TL_S3_PATH_STYLE : TL_S3_VIRTUAL_HOSTED;
		cfg.interrupted = p->interrupted;
		cfg.interrupt_arg = p->interrupt_arg;
		ps->s3 = tl_storage_s3_new(&cfg, err);
		rc = ps->s3 ? 0 : -1;
	}
	credentials_free(&cred);
	json_decref(config);
	return rc;
}

tl_storage *tl_profile_storage_new(const tl_profile *p, tl_error *err)
{
	bool is_s3 = false;
	tl_error local;
	tl_error_clear(&local);
	int rc = tl_profile_check_warehouse(p->warehouse, &is_s3, &local);
	if (rc == 0 && !is_s3)
		return NULL;
	profile_storage *ps = tl_calloc(1, sizeof(*ps));
	if (p->credential_ref != NULL)
		snprintf(ps->context, sizeof(ps->context), "storage profile '%.100s' (credentials %.100s)", p->name,
		         p->credential_ref);
	else
		snprintf(ps->context, sizeof(ps->context), "storage profile '%.100s'", p->name);
	if (rc == 0 && p->credential_ref != NULL && !tl_profile_ref_valid(p->credential_ref))
		rc = tl_error_set(&local, TL_ERR_INVALID, "credential_ref is not [A-Za-z0-9_]+");
	if (rc == 0)
		rc = make_s3(ps, p, &local);
	if (rc < 0) {
		tl_error_prefix(&local, "%s", ps->context);
		ps->failure = local;
		if (err != NULL && err->code == TL_OK)
			*err = local;
	}
	ps->base.name = "s3 (storage profile)";
	ps->base.state = ps;
	ps->base.open_read = ps_open_read;
	ps->base.create = ps_create;
	ps->base.create_if_absent = ps_create_if_absent;
	ps->base.replace = ps_replace;
	ps->base.list = ps_list;
	ps->base.remove = ps_remove;
	ps->base.remove_all = ps_remove_all;
	ps->base.stat = ps_stat;
	ps->base.make_dirs = ps_make_dirs;
	ps->base.canonical = ps_canonical;
	return &ps->base;
}

void tl_profile_storage_free(tl_storage *storage)
{
	if (storage == NULL)
		return;
	profile_storage *ps = storage->state;
	tl_storage_s3_free(ps->s3);
	tl_free(ps);
}
