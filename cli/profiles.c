/*
 * profiles.c: storage profiles on the client side (see profiles.h): every
 * statement on tierdb.storage_profiles, and the storages this process
 * registers for the profiles' warehouses.
 *
 * Changes to profiles take the table lock SHARE ROW EXCLUSIVE first: it
 * serialises them against each other (so "at most one default" is decided
 * by one writer at a time rather than by a unique-index violation) while
 * readers and registrations, whose foreign-key checks lock rows only, go on.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <jansson.h>

#include "catalog.h"
#include "pg.h"
#include "profiles.h"
#include "tierlake/buf.h"
#include "tierlake/profile.h"

/* ------------------------------------------------------------ changes */

/* Runs f inside BEGIN ... COMMIT with the profiles locked; rolls back when it fails. */
static int in_transaction(PGconn *c, int (*f)(PGconn *c, const void *arg, tl_error *err), const void *arg,
                          tl_error *err)
{
	if (tdb_pg_exec(c, "starting the profile change", "BEGIN", 0, NULL, err) < 0)
		return -1;
	int rc = tdb_pg_exec(c, "locking tierdb.storage_profiles",
	                     "LOCK TABLE tierdb.storage_profiles IN SHARE ROW EXCLUSIVE MODE", 0, NULL, err);
	if (rc == 0)
		rc = f(c, arg, err);
	if (rc == 0)
		return tdb_pg_exec(c, "committing the profile change", "COMMIT", 0, NULL, err);
	tdb_pg_exec(c, "ending the profile change", "ROLLBACK", 0, NULL, NULL);
	return -1;
}

/* 1 when the profile exists (with *is_default), 0 when not, -1 on error. */
static int profile_exists(PGconn *c, const char *name, bool *is_default, tl_error *err)
{
	const char *params[] = {name};
	PGresult *res = tdb_pg_query(c, "reading the storage profile",
	                             "SELECT is_default FROM tierdb.storage_profiles WHERE profile_name = $1", 1, params,
	                             err);
	if (res == NULL)
		return -1;
	int found = PQntuples(res) > 0;
	if (found && is_default)
		*is_default = PQgetvalue(res, 0, 0)[0] == 't';
	PQclear(res);
	return found;
}

static int not_found(const char *name, tl_error *err)
{
	return tl_error_set(err, TL_ERR_NOT_FOUND, "storage profile '%s' does not exist; 'tierdb profile list' shows them",
	                    name);
}

static int make_default(PGconn *c, const char *name, tl_error *err)
{
	const char *params[] = {name};
	/* Two statements: one UPDATE flipping both rows could meet the unique index half-way. */
	if (tdb_pg_exec(c, "clearing the default profile",
	                "UPDATE tierdb.storage_profiles SET is_default = false WHERE is_default AND profile_name <> $1",
	                1, params, err) < 0)
		return -1;
	return tdb_pg_exec(c, "setting the default profile",
	                   "UPDATE tierdb.storage_profiles SET is_default = true WHERE profile_name = $1", 1, params, err);
}

/* --config "k=v;k=v" as a JSON object (text, malloc'd); values are checked by tl_profile_check_config. */
static char *config_json(const char *text, tl_error *err)
{
	json_t *obj = json_object();
	char *copy = tl_strdup(text ? text : ""), *save = NULL;
	int rc = 0;
	for (char *item = strtok_r(copy, ";", &save); item && rc == 0; item = strtok_r(NULL, ";", &save)) {
		char *eq = strchr(item, '=');
		if (eq == NULL || eq == item) {
			rc = tl_error_set(err, TL_ERR_INVALID, "--config item '%s' is not key=value", item);
			break;
		}
		*eq = '\0';
		if (json_object_get(obj, item) != NULL)
			rc = tl_error_set(err, TL_ERR_INVALID, "--config sets '%s' twice", item);
		else
			json_object_set_new(obj, item, json_string(eq + 1));
	}
	free(copy);
	char *out = rc == 0 ? json_dumps(obj, JSON_COMPACT | JSON_SORT_KEYS) : NULL;
	json_decref(obj);
	if (out != NULL && tl_profile_check_config(out, err) < 0) {
		tl_error_prefix(err, "--config");
		free(out);
		out = NULL;
	}
	return out;
}

typedef struct create_args {
	const tdb_profile_spec *spec;
	const char *warehouse;
	const char *config;
} create_args;

static int create_locked(PGconn *c, const void *arg, tl_error *err)
{
	const create_args *a = arg;
	int exists = profile_exists(c, a->spec->name, NULL, err);
	if (exists != 0)
		return exists < 0 ? -1
		                  : tl_error_set(err, TL_ERR_CONFLICT, "storage profile '%s' already exists",
		                                 a->spec->name);
	const char *params[] = {a->spec->name, a->warehouse, a->config, a->spec->credential_ref};
	PGresult *res = tdb_pg_query(c, "checking the warehouse",
	                             "SELECT profile_name FROM tierdb.storage_profiles WHERE warehouse = $1", 1,
	                             params + 1, err);
	if (res == NULL)
		return -1;
	if (PQntuples(res) > 0) {
		tl_error_set(err, TL_ERR_CONFLICT,
		             "storage profile '%s' already uses warehouse %s; two profiles cannot share a warehouse",
		             PQgetvalue(res, 0, 0), a->warehouse);
		PQclear(res);
		return -1;
	}
	PQclear(res);
	if (tdb_pg_exec(c, "creating the storage profile",
	                "INSERT INTO tierdb.storage_profiles (profile_name, lake_format, warehouse, lake_config,"
	                " credential_ref) VALUES ($1, 'iceberg', $2, $3::jsonb, $4)",
	                4, params, err) < 0)
		return -1;
	return a->spec->make_default ? make_default(c, a->spec->name, err) : 0;
}

static bool name_valid(const char *name)
{
	if (name[0] == '\0' || strlen(name) > 63)
		return false;
	for (const char *p = name; *p; p++)
		if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') || *p == '_' ||
		      *p == '-' || *p == '.'))
			return false;
	return true;
}

int tdb_profile_create(PGconn *c, const tdb_profile_spec *spec, tl_error *err)
{
	if (!name_valid(spec->name))
		return tl_error_set(err, TL_ERR_INVALID,
		                    "--name '%s' is not a profile name: use 1 to 63 of A-Z a-z 0-9 _ - .", spec->name);
	if (spec->warehouse[0] == '\0')
		return tl_error_set(err, TL_ERR_INVALID,
		                    "--warehouse is empty: name a local directory or s3://bucket[/prefix] (only the "
		                    "seeded 'default' profile takes its warehouse from the daemon's environment)");
	if (spec->credential_ref != NULL && !tl_profile_ref_valid(spec->credential_ref))
		return tl_error_set(err, TL_ERR_INVALID,
		                    "--credentials '%s' is not a reference: use letters, digits and '_' (it names the "
		                    "variable TIERDB_CREDENTIALS_<REF>, never the secret itself)",
		                    spec->credential_ref);
	char *warehouse = tdb_absolute_warehouse(spec->warehouse, err);
	if (warehouse == NULL)
		return -1;
	/* A trailing '/' on a local path would make two spellings of one warehouse. */
	for (size_t n = strlen(warehouse); n > 1 && warehouse[n - 1] == '/' && warehouse[0] == '/'; n--)
		warehouse[n - 1] = '\0';
	bool is_s3 = false;
	int rc = tl_profile_check_warehouse(warehouse, &is_s3, err);
	if (rc == 0 && !is_s3 && (spec->config != NULL || spec->credential_ref != NULL))
		rc = tl_error_set(err, TL_ERR_INVALID,
		                  "--config and --credentials apply to s3:// warehouses; %s is a local directory", warehouse);
	char *config = rc == 0 ? config_json(spec->config, err) : NULL;
	if (rc == 0 && config != NULL) {
		create_args a = {spec, warehouse, config};
		rc = in_transaction(c, create_locked, &a, err);
	} else
		rc = -1;
	free(config);
	free(warehouse);
	return rc;
}

static int drop_locked(PGconn *c, const void *arg, tl_error *err)
{
	const char *name = arg;
	const char *params[] = {name};
	/* FOR UPDATE waits for, and then blocks, a registration that is about to reference the row. */
	PGresult *res = tdb_pg_query(c, "reading the storage profile",
	                             "SELECT is_default FROM tierdb.storage_profiles WHERE profile_name = $1 FOR UPDATE",
	                             1, params, err);
	if (res == NULL)
		return -1;
	int found = PQntuples(res);
	bool is_default = found && PQgetvalue(res, 0, 0)[0] == 't';
	PQclear(res);
	if (!found)
		return not_found(name, err);
	if (is_default)
		return tl_error_set(err, TL_ERR_INVALID,
		                    "storage profile '%s' is the default; make another one the default first "
		                    "('tierdb profile set-default --name P')",
		                    name);
	res = tdb_pg_query(c, "finding the tables that use the profile",
	                   "SELECT count(*), string_agg(quote_ident(schema_name) || '.' || quote_ident(table_name), ', '"
	                   " ORDER BY schema_name, table_name) FROM tierdb.tables WHERE storage_profile = $1",
	                   1, params, err);
	if (res == NULL)
		return -1;
	long used = strtol(PQgetvalue(res, 0, 0), NULL, 10);
	if (used > 0) {
		tl_error_set(err, TL_ERR_CONFLICT,
		             "storage profile '%s' is used by %ld registered table%s (%.300s); unregister %s first", name,
		             used, used == 1 ? "" : "s", PQgetvalue(res, 0, 1), used == 1 ? "it" : "them");
		PQclear(res);
		return -1;
	}
	PQclear(res);
	return tdb_pg_exec(c, "dropping the storage profile", "DELETE FROM tierdb.storage_profiles WHERE profile_name = $1",
	                   1, params, err);
}

int tdb_profile_drop(PGconn *c, const char *name, tl_error *err)
{
	return in_transaction(c, drop_locked, name, err);
}

static int set_default_locked(PGconn *c, const void *arg, tl_error *err)
{
	const char *name = arg;
	int exists = profile_exists(c, name, NULL, err);
	if (exists <= 0)
		return exists < 0 ? -1 : not_found(name, err);
	return make_default(c, name, err);
}

int tdb_profile_set_default(PGconn *c, const char *name, tl_error *err)
{
	return in_transaction(c, set_default_locked, name, err);
}

PGresult *tdb_profile_list(PGconn *c, bool json, tl_error *err)
{
#define PROFILE_ROWS                                                                                         \
	"SELECT p.profile_name AS profile, p.is_default AS \"default\","                                         \
	" CASE WHEN p.warehouse = '' THEN '(TIERDB_WAREHOUSE)' ELSE p.warehouse END AS warehouse,"              \
	" p.lake_config AS settings, p.credential_ref AS credentials,"                                          \
	" (SELECT count(*) FROM tierdb.tables t WHERE t.storage_profile = p.profile_name) AS tables"              \
	" FROM tierdb.storage_profiles p"
	return tdb_pg_query(c, "listing storage profiles",
	                    json ? "SELECT coalesce(json_agg(r ORDER BY r.profile), '[]')::text FROM (" PROFILE_ROWS ") r"
	                         : PROFILE_ROWS " ORDER BY p.profile_name",
	                    0, NULL, err);
#undef PROFILE_ROWS
}

/* ------------------------------------------------------------ serving */

/* A profile this process serves, and what its storage was made from. */
typedef struct served {
	char *name;
	char *warehouse;
	char *signature;    /* the row and where its credentials came from: a change makes a new storage */
	tl_storage *storage;
} served;

static served *served_list;
static int served_count;

/*
 * Storages of profiles that changed, kept rather than freed: another
 * thread (a Stream Load) may still be using one it looked up before the
 * change. A profile changes rarely (credentials rotated), so they are few.
 */
static tl_storage **retired;
static int nretired;

/*
 * TIERDB_CREDENTIALS_FILE, read once per tdb_profiles_serve call when a
 * reference is not in the environment: the same format as the server's
 * credentials file, so the embedded worker (or a systemd unit) can point
 * the daemon at one file rather than carry secrets in its environment.
 */
typedef struct credentials_file {
	bool loaded;
	char *path;       /* NULL when TIERDB_CREDENTIALS_FILE is unset */
	char *text;       /* its contents, or NULL with `error` */
	char *error;
	char identity[96]; /* inode, size and mtime: a rewritten file makes new storages */
} credentials_file;

static void load_credentials_file(credentials_file *f)
{
	f->loaded = true;
	const char *path = getenv("TIERDB_CREDENTIALS_FILE");
	if (path == NULL || path[0] == '\0')
		return;
	f->path = tl_strdup(path);
	tl_buf msg;
	tl_buf_init(&msg);
	FILE *in = fopen(path, "re");
	struct stat st;
	if (in == NULL)
		tl_buf_printf(&msg, "the credentials file %s (TIERDB_CREDENTIALS_FILE) cannot be opened: %s", path,
		              strerror(errno));
	else if (fstat(fileno(in), &st) < 0 || !S_ISREG(st.st_mode))
		tl_buf_printf(&msg, "the credentials file %s (TIERDB_CREDENTIALS_FILE) is not a regular file", path);
	/* The server's rule (like its ssl_key_file's): ours with no group or world access, or root's with group read. */
	else if (!(st.st_uid == geteuid() && (st.st_mode & (S_IRWXG | S_IRWXO)) == 0) &&
	         !(st.st_uid == 0 && (st.st_mode & (S_IWGRP | S_IXGRP | S_IRWXO)) == 0))
		tl_buf_printf(&msg,
		              "the credentials file %s (TIERDB_CREDENTIALS_FILE) is refused: it must be owned by this "
		              "process's user with no group or world access (chmod 0600), or by root with at most group "
		              "read",
		              path);
	else {
		snprintf(f->identity, sizeof(f->identity), "%lu/%lld/%lld.%09ld", (unsigned long)st.st_ino,
		         (long long)st.st_size, (long long)st.st_mtim.tv_sec, st.st_mtim.tv_nsec);
		tl_buf text;
		tl_buf_init(&text);
		char chunk[4096];
		size_t n;
		while ((n = fread(chunk, 1, sizeof(chunk), in)) > 0)
			tl_buf_append(&text, chunk, n);
		tl_buf_append_byte(&text, '\0');
		f->text = (char *)text.data;
	}
	if (in != NULL)
		fclose(in);
	if (msg.len > 0) {
		tl_buf_append_byte(&msg, '\0');
		f->error = (char *)msg.data;
	} else
		tl_buf_free(&msg);
}

static void credentials_file_free(credentials_file *f)
{
	if (f->text != NULL)
		memset(f->text, 0, strlen(f->text));
	free(f->text);
	free(f->path);
	free(f->error);
}

static char *signature_of(const char *warehouse, const char *config, const char *ref, const char *source)
{
	tl_buf b;
	tl_buf_init(&b);
	tl_buf_printf(&b, "%s\x1f%s\x1f%s\x1f%s", warehouse, config ? config : "", ref ? ref : "\x1e", source);
	tl_buf_append_byte(&b, '\0');
	return (char *)b.data;
}

static void served_free(served *s)
{
	free(s->name);
	free(s->warehouse);
	free(s->signature);
	if (s->storage != NULL) {
		tl_storage **grown = tl_realloc(retired, (size_t)(nretired + 1) * sizeof(*retired));
		if (grown != NULL) { /* out of memory: leaked, never freed under a user */
			retired = grown;
			retired[nretired++] = s->storage;
		}
	}
}

/* The storage for one row: the previous one when nothing changed, else a new one. */
static void serve_row(served *out, const char *name, const char *warehouse, const char *config, const char *ref,
                      credentials_file *file, void (*warn)(const char *message))
{
	char var[200];
	snprintf(var, sizeof(var), TL_CREDENTIALS_ENV_PREFIX "%.150s", ref ? ref : "");
	tl_profile p = {.name = name,
	                .warehouse = warehouse,
	                .lake_config = config,
	                .credential_ref = ref,
	                .credentials = ref ? getenv(var) : NULL,
	                .credentials_source = "the environment of this tierdb process"};
	/* The environment wins; the file is the fallback for references it does not hold. */
	bool from_file = false;
	if (ref != NULL && p.credentials == NULL) {
		if (!file->loaded)
			load_credentials_file(file);
		from_file = file->path != NULL;
	}
	out->name = tl_strdup(name);
	out->warehouse = tl_strdup(warehouse);
	out->signature = signature_of(warehouse, config, ref, from_file ? file->identity : "env");
	for (int i = 0; i < served_count; i++)
		if (served_list[i].storage != NULL && strcmp(served_list[i].name, name) == 0 &&
		    strcmp(served_list[i].signature, out->signature) == 0) {
			out->storage = served_list[i].storage;
			served_list[i].storage = NULL;
			return;
		}
	char *found = NULL;
	char source[300];
	tl_error err;
	tl_error_clear(&err);
	if (from_file) {
		snprintf(source, sizeof(source), "the environment of this tierdb process or the credentials file %.200s",
		         file->path);
		p.credentials_source = source;
		if (file->error != NULL)
			p.credentials_error = file->error;
		else if (tl_profile_credentials_lookup(file->text, ref, file->path, &found, &err) < 0)
			p.credentials_error = err.message;
		p.credentials = found;
	}
	tl_error problem;
	tl_error_clear(&problem);
	out->storage = tl_profile_storage_new(&p, &problem);
	if (found != NULL) {
		memset(found, 0, strlen(found));
		free(found);
	}
	if (problem.code != TL_OK && warn != NULL)
		warn(problem.message);
}

int tdb_profiles_serve(PGconn *c, void (*warn)(const char *message), tl_error *err)
{
	PGresult *res = tdb_pg_query(c, "reading storage profiles",
	                             "SELECT profile_name, warehouse, lake_config::text, credential_ref"
	                             " FROM tierdb.storage_profiles WHERE warehouse <> '' ORDER BY profile_name",
	                             0, NULL, err);
	if (res == NULL)
		return -1;
	int n = PQntuples(res);
	served *next = tl_calloc((size_t)n + 1, sizeof(*next));
	int count = 0;
	credentials_file file;
	memset(&file, 0, sizeof(file));
	for (int i = 0; i < n; i++) {
		bool is_s3 = false;
		if (tl_profile_check_warehouse(PQgetvalue(res, i, 1), &is_s3, NULL) < 0 || !is_s3)
			continue; /* local warehouses need no storage of their own */
		serve_row(&next[count++], PQgetvalue(res, i, 0), PQgetvalue(res, i, 1), PQgetvalue(res, i, 2),
		          PQgetisnull(res, i, 3) ? NULL : PQgetvalue(res, i, 3), &file, warn);
	}
	PQclear(res);
	credentials_file_free(&file);
	/* Withdraw every old registration first, so a reused prefix ends up with the new storage. */
	for (int i = 0; i < served_count; i++) {
		tl_storage_register_prefix(served_list[i].warehouse, NULL);
		served_free(&served_list[i]);
	}
	free(served_list);
	served_list = next;
	served_count = count;
	for (int i = 0; i < count; i++)
		tl_storage_register_prefix(next[i].warehouse, next[i].storage);
	return 0;
}
