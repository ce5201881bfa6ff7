/*-------------------------------------------------------------------------
 *
 * storage_profiles.c
 *		Serving the storage profiles' warehouses in a backend.
 *
 * A storage profile (SPEC §4, tierdb.storage_profiles) whose warehouse is on
 * S3 brings its own endpoint, region and credentials. The lake library
 * serves a location with the storage registered for the longest prefix it
 * lies under (tierlake/storage.h), so this backend registers one storage
 * per such profile, made by the library's profile rules (tierlake/
 * profile.h), before any lake location is opened; locations under no
 * profile fall through to the library's S3 storage configured from the
 * server's environment (TIERDB_S3_*, AWS_*).
 *
 * Credentials never live in the catalog: a profile names a reference REF,
 * and the backend finds TIERDB_CREDENTIALS_<REF> in the credentials file,
 * tierdb.credentials_file (relative to the data directory; a superuser-only
 * SIGHUP setting). The file must be readable by the server's OS user alone,
 * like ssl_key_file: owned by it with no group or other permissions, or
 * owned by root with at most group read. A file that fails that check, a
 * missing file or a missing reference does not fail anything by itself:
 * the profile gets a storage that fails every operation with the reason
 * (naming the profile, the reference and the file, never a secret), so the
 * error comes when, and only when, one of that profile's tables is read.
 *
 * Freshness: the first lake access of each transaction reads the profile
 * rows (a handful) and stats the credentials file, and rebuilds the
 * storages only if either changed. Once per transaction rather than once
 * per backend, because a profile may be created or a file rotated while
 * sessions stay connected; checking the rows themselves (rather than an
 * xmin) also catches a changed tierdb.credentials_file after SIGHUP, and
 * the file's stat catches its content being replaced. Rebuilding happens
 * only at the first access of a transaction, when this backend has no lake
 * object open, so a storage is never freed under an open scan.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "access/heapam.h"
#include "access/htup_details.h"
#include "access/table.h"
#include "access/tableam.h"
#include "access/xact.h"
#include "catalog/namespace.h"
#include "fmgr.h"
#include "lib/stringinfo.h"
#include "miscadmin.h"
#include "parser/parse_relation.h"
#include "utils/guc.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/rel.h"
#include "utils/snapmgr.h"

#include "tierlake/profile.h"

#include "storage_profiles.h"

/* The longest credentials file read: it holds a few lines of keys. */
#define CREDENTIALS_FILE_MAX (1024 * 1024)

static char *credentials_file = NULL;

/* Whether this transaction has checked the profiles already (reset at its end). */
static bool checked_this_xact = false;

/* What the registered storages were made from: profile rows and the file's identity. */
static char *served_signature = NULL;

typedef struct ServedProfile
{
	char	   *warehouse;		/* malloc'd: the registered prefix */
	tl_storage *storage;
} ServedProfile;

static ServedProfile *served = NULL;
static int	nserved = 0;

/* One profile row whose warehouse is on S3. */
typedef struct ProfileRow
{
	char	   *name;
	char	   *warehouse;
	char	   *lake_config;
	char	   *credential_ref;
} ProfileRow;

static void
end_of_xact(XactEvent event, void *arg)
{
	if (event == XACT_EVENT_COMMIT || event == XACT_EVENT_ABORT ||
		event == XACT_EVENT_PARALLEL_COMMIT || event == XACT_EVENT_PARALLEL_ABORT)
		checked_this_xact = false;
}

void
storage_profiles_init(void)
{
	DefineCustomStringVariable("tierdb.credentials_file",
							   "The file holding the S3 credentials that storage profiles name (TIERDB_CREDENTIALS_<REF>=...).",
							   "Relative paths are relative to the data directory. The file must be readable by the server's OS user only.",
							   &credentials_file,
							   "tierdb_credentials",
							   PGC_SIGHUP,
							   GUC_SUPERUSER_ONLY,
							   NULL, NULL, NULL);
	RegisterXactCallback(end_of_xact, NULL);
}

/* A query cancel or termination stops an S3 request in flight. */
static bool
backend_interrupted(void *arg)
{
	return QueryCancelPending || ProcDiePending;
}

/* A column's value as text (its type's output function), or NULL. */
static char *
column_text(Relation rel, HeapTuple tuple, const char *name)
{
	AttrNumber	attno = attnameAttNum(rel, name, false);
	bool		isnull;
	Datum		d = heap_getattr(tuple, attno, RelationGetDescr(rel), &isnull);
	Oid			out;
	bool		varlena;

	if (isnull)
		return NULL;
	getTypeOutputInfo(TupleDescAttr(RelationGetDescr(rel), attno - 1)->atttypid, &out, &varlena);
	return OidOutputFunctionCall(out, d);
}

/*
 * The profiles with an S3 warehouse, read directly rather than through SQL:
 * a reader with SELECT on its table needs no privilege on the catalog.
 */
static List *
read_s3_profiles(void)
{
	Oid			nsp = get_namespace_oid("tierdb", true);
	Oid			catalog = OidIsValid(nsp) ? get_relname_relid("storage_profiles", nsp) : InvalidOid;
	Relation	rel;
	TableScanDesc scan;
	HeapTuple	tuple;
	List	   *rows = NIL;
	bool		pushed = false;

	if (!OidIsValid(catalog))
		return NIL;
	if (!ActiveSnapshotSet())
	{
		PushActiveSnapshot(GetTransactionSnapshot());
		pushed = true;
	}
	rel = table_open(catalog, AccessShareLock);
	scan = table_beginscan(rel, GetActiveSnapshot(), 0, NULL);
	while ((tuple = heap_getnext(scan, ForwardScanDirection)) != NULL)
	{
		char	   *warehouse = column_text(rel, tuple, "warehouse");
		bool		is_s3 = false;
		ProfileRow *row;

		if (warehouse == NULL || warehouse[0] == '\0' ||
			tl_profile_check_warehouse(warehouse, &is_s3, NULL) < 0 || !is_s3)
			continue;
		row = palloc0(sizeof(ProfileRow));
		row->name = column_text(rel, tuple, "profile_name");
		row->warehouse = warehouse;
		row->lake_config = column_text(rel, tuple, "lake_config");
		row->credential_ref = column_text(rel, tuple, "credential_ref");
		rows = lappend(rows, row);
	}
	table_endscan(scan);
	table_close(rel, AccessShareLock);
	if (pushed)
		PopActiveSnapshot();
	return rows;
}

char *
storage_profiles_credentials_path(void)
{
	const char *setting = credentials_file != NULL ? credentials_file : "";

	if (is_absolute_path(setting) || DataDir == NULL)
		return pstrdup(setting);
	return psprintf("%s/%s", DataDir, setting);
}

/*
 * The file's contents, or NULL with *error saying why it cannot be used.
 * The permission check is made on the opened file, so what is checked is
 * what is read.
 */
static char *
read_credentials_file(const char *path, char **error)
{
	int			fd = open(path, O_RDONLY | O_CLOEXEC);
	struct stat st;
	char	   *text = NULL;

	*error = NULL;
	if (fd < 0)
	{
		*error = psprintf("the credentials file %s cannot be opened (%m); create it (mode 0600, owned by the "
						  "server's OS user) or set tierdb.credentials_file", path);
		return NULL;
	}
	if (fstat(fd, &st) < 0)
		*error = psprintf("the credentials file %s cannot be examined (%m)", path);
	else if (!S_ISREG(st.st_mode))
		*error = psprintf("the credentials file %s is not a regular file", path);
	else if (st.st_uid != geteuid() && st.st_uid != 0)
		*error = psprintf("the credentials file %s is refused: it must be owned by the database server's OS user "
						  "or root", path);
	else if ((st.st_uid == geteuid() && (st.st_mode & (S_IRWXG | S_IRWXO)) != 0) ||
			 (st.st_uid == 0 && (st.st_mode & (S_IWGRP | S_IXGRP | S_IRWXO)) != 0))
		*error = psprintf("the credentials file %s is refused: it has group or world access; run chmod 0600 on it "
						  "(u=rw, or u=rw,g=r if owned by root)", path);
	else if (st.st_size > CREDENTIALS_FILE_MAX)
		*error = psprintf("the credentials file %s is larger than %d bytes", path, CREDENTIALS_FILE_MAX);
	else
	{
		size_t		len = 0;
		ssize_t		n;

		text = palloc(st.st_size + 1);
		while (len < (size_t) st.st_size && (n = read(fd, text + len, st.st_size - len)) > 0)
			len += n;
		text[len] = '\0';
	}
	close(fd);
	return text;
}

/*
 * What the storages depend on, as one string: the rows, and when any names
 * a reference, the credentials file's path and identity (a rotated or
 * rewritten file changes its inode, size or mtime).
 */
static char *
signature_of(List *rows, const char *path)
{
	StringInfoData sig;
	ListCell   *lc;
	bool		needs_file = false;

	initStringInfo(&sig);
	foreach(lc, rows)
	{
		ProfileRow *row = lfirst(lc);

		appendStringInfo(&sig, "%s\x1f%s\x1f%s\x1f%s\x1e", row->name, row->warehouse,
						 row->lake_config ? row->lake_config : "",
						 row->credential_ref ? row->credential_ref : "\x1d");
		needs_file = needs_file || row->credential_ref != NULL;
	}
	if (needs_file)
	{
		struct stat st;

		if (stat(path, &st) == 0)
			appendStringInfo(&sig, "%s\x1f%lu\x1f%lld\x1f%lld.%09ld\x1f%o\x1f%u", path, (unsigned long) st.st_ino,
							 (long long) st.st_size, (long long) st.st_mtim.tv_sec, st.st_mtim.tv_nsec,
							 (unsigned) st.st_mode, (unsigned) st.st_uid);
		else
			appendStringInfo(&sig, "%s\x1fmissing", path);
	}
	return sig.data;
}

static void
withdraw_served(void)
{
	for (int i = 0; i < nserved; i++)
	{
		tl_storage_register_prefix(served[i].warehouse, NULL);
		tl_profile_storage_free(served[i].storage);
		free(served[i].warehouse);
	}
	free(served);
	served = NULL;
	nserved = 0;
}

/* Makes and registers one storage per row; credentials from the file when a row names a reference. */
static void
serve_rows(List *rows, const char *path)
{
	char	   *file_text = NULL;
	char	   *file_error = NULL;
	bool		file_read = false;
	char	   *source = psprintf("the credentials file %s (tierdb.credentials_file)", path);
	ListCell   *lc;

	served = calloc(list_length(rows) + 1, sizeof(ServedProfile));
	if (served == NULL)
		ereport(ERROR, (errcode(ERRCODE_OUT_OF_MEMORY), errmsg("out of memory")));
	foreach(lc, rows)
	{
		ProfileRow *row = lfirst(lc);
		char	   *credentials = NULL;
		char	   *lookup_error = file_error;
		tl_profile	p = {0};
		tl_error	err;

		if (row->credential_ref != NULL && !file_read)
		{
			file_text = read_credentials_file(path, &file_error);
			file_read = true;
			lookup_error = file_error;
		}
		tl_error_clear(&err);
		if (row->credential_ref != NULL && file_text != NULL &&
			tl_profile_credentials_lookup(file_text, row->credential_ref, path, &credentials, &err) < 0)
			lookup_error = pstrdup(err.message);
		p.name = row->name;
		p.warehouse = row->warehouse;
		p.lake_config = row->lake_config;
		p.credential_ref = row->credential_ref;
		p.credentials = credentials;
		p.credentials_source = source;
		p.credentials_error = row->credential_ref != NULL ? lookup_error : NULL;
		p.interrupted = backend_interrupted;
		tl_error_clear(&err);
		served[nserved].storage = tl_profile_storage_new(&p, &err);
		if (credentials != NULL)
		{
			explicit_bzero(credentials, strlen(credentials));
			free(credentials);
		}
		served[nserved].warehouse = strdup(row->warehouse);
		if (served[nserved].warehouse == NULL)
		{
			tl_profile_storage_free(served[nserved].storage);
			ereport(ERROR, (errcode(ERRCODE_OUT_OF_MEMORY), errmsg("out of memory")));
		}
		tl_storage_register_prefix(served[nserved].warehouse, served[nserved].storage);
		nserved++;
	}
	if (file_text != NULL)
		explicit_bzero(file_text, strlen(file_text));
}

void
storage_profiles_prepare(void)
{
	MemoryContext cxt;
	MemoryContext old;
	List	   *rows;
	char	   *path;
	char	   *signature;

	if (checked_this_xact || !IsTransactionState())
		return;
	cxt = AllocSetContextCreate(CurrentMemoryContext, "tierdb storage profiles", ALLOCSET_SMALL_SIZES);
	old = MemoryContextSwitchTo(cxt);
	rows = read_s3_profiles();
	path = storage_profiles_credentials_path();
	signature = signature_of(rows, path);
	if (served_signature == NULL || strcmp(signature, served_signature) != 0)
	{
		withdraw_served();
		if (served_signature != NULL)
			pfree(served_signature);
		served_signature = NULL;
		serve_rows(rows, path);
		served_signature = MemoryContextStrdup(TopMemoryContext, signature);
	}
	MemoryContextSwitchTo(old);
	MemoryContextDelete(cxt);
	checked_this_xact = true;
}
