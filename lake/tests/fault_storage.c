/*
 * fault_storage.c: the failing tl_storage of fault_storage.h.
 */
#include <stdlib.h>

#include "fault_storage.h"
#include "tierlake/buf.h"

/* Counts a call; true (err set) when it is the one to fail. */
static bool hit(fault_storage *fs, const char *what, const char *location, tl_error *err)
{
	fs->calls++;
	if (fs->fail_at == 0 || fs->calls < fs->fail_at || (!fs->sticky && fs->calls != fs->fail_at))
		return false;
	fs->injected++;
	tl_error_set(err, TL_ERR_IO, "%s %s: injected I/O error at call %ld", what, location, fs->calls);
	return true;
}

typedef struct fault_input {
	tl_input base;
	tl_input *inner;
	fault_storage *fs;
} fault_input;

static int fault_read_at(tl_input *in, uint64_t offset, void *buf, size_t len, tl_error *err)
{
	fault_input *f = (fault_input *)in;
	if (hit(f->fs, "reading", in->name, err))
		return -1;
	return tl_input_read(f->inner, offset, buf, len, err);
}

static void fault_input_close(tl_input *in)
{
	fault_input *f = (fault_input *)in;
	tl_input_close(f->inner);
	free(f);
}

typedef struct fault_output {
	tl_output base;
	tl_output *inner;
	fault_storage *fs;
} fault_output;

static int fault_write(tl_output *out, const void *buf, size_t len, tl_error *err)
{
	fault_output *f = (fault_output *)out;
	if (hit(f->fs, "writing", out->name, err))
		return -1;
	int rc = tl_output_write(f->inner, buf, len, err);
	out->offset = f->inner->offset;
	return rc;
}

static int fault_finish(tl_output *out, tl_error *err)
{
	fault_output *f = (fault_output *)out;
	if (hit(f->fs, "finishing", out->name, err))
		return -1;
	return f->inner->finish(f->inner, err);
}

static void fault_output_close(tl_output *out)
{
	fault_output *f = (fault_output *)out;
	tl_output_close(f->inner);
	free(f);
}

static tl_input *fs_open_read(tl_storage *s, const char *location, tl_error *err)
{
	fault_storage *fs = (fault_storage *)s;
	if (hit(fs, "opening", location, err))
		return NULL;
	tl_input *inner = fs->inner->open_read(fs->inner, location, err);
	if (inner == NULL)
		return NULL;
	fault_input *f = tl_calloc(1, sizeof(*f));
	f->inner = inner;
	f->fs = fs;
	f->base.read_at = fault_read_at;
	f->base.close = fault_input_close;
	f->base.size = inner->size;
	f->base.name = inner->name;
	return &f->base;
}

static tl_output *fs_create(tl_storage *s, const char *location, int mode, tl_error *err)
{
	fault_storage *fs = (fault_storage *)s;
	if (hit(fs, "creating", location, err))
		return NULL;
	tl_output *inner = fs->inner->create(fs->inner, location, mode, err);
	if (inner == NULL)
		return NULL;
	fault_output *f = tl_calloc(1, sizeof(*f));
	f->inner = inner;
	f->fs = fs;
	f->base.write = fault_write;
	f->base.finish = fault_finish;
	f->base.close = fault_output_close;
	f->base.name = inner->name;
	return &f->base;
}

static int fs_create_if_absent(tl_storage *s, const char *location, const void *data, size_t len, tl_error *err)
{
	fault_storage *fs = (fault_storage *)s;
	return hit(fs, "publishing", location, err) ? -1
	                                            : fs->inner->create_if_absent(fs->inner, location, data, len, err);
}

static int fs_replace(tl_storage *s, const char *location, const void *data, size_t len, tl_error *err)
{
	fault_storage *fs = (fault_storage *)s;
	return hit(fs, "replacing", location, err) ? -1 : fs->inner->replace(fs->inner, location, data, len, err);
}

static int fs_list(tl_storage *s, const char *location, int flags, tl_storage_list *out, tl_error *err)
{
	fault_storage *fs = (fault_storage *)s;
	out->entries = NULL;
	out->count = 0;
	return hit(fs, "listing", location, err) ? -1 : fs->inner->list(fs->inner, location, flags, out, err);
}

static int fs_remove(tl_storage *s, const char *location, tl_error *err)
{
	fault_storage *fs = (fault_storage *)s;
	return hit(fs, "removing", location, err) ? -1 : fs->inner->remove(fs->inner, location, err);
}

static int fs_remove_all(tl_storage *s, const char *location, tl_error *err)
{
	fault_storage *fs = (fault_storage *)s;
	return hit(fs, "removing", location, err) ? -1 : fs->inner->remove_all(fs->inner, location, err);
}

static int fs_stat(tl_storage *s, const char *location, uint64_t *size, bool *is_dir, tl_error *err)
{
	fault_storage *fs = (fault_storage *)s;
	return hit(fs, "checking", location, err) ? -1 : fs->inner->stat(fs->inner, location, size, is_dir, err);
}

static int fs_make_dirs(tl_storage *s, const char *location, tl_error *err)
{
	fault_storage *fs = (fault_storage *)s;
	return hit(fs, "making", location, err) ? -1 : fs->inner->make_dirs(fs->inner, location, err);
}

static char *fs_canonical(tl_storage *s, const char *location, tl_error *err)
{
	fault_storage *fs = (fault_storage *)s;
	return hit(fs, "resolving", location, err) ? NULL : fs->inner->canonical(fs->inner, location, err);
}

void fault_storage_init(fault_storage *fs, tl_storage *inner)
{
	*fs = (fault_storage){
		.base =
			{
				.name = "fault",
				.open_read = fs_open_read,
				.create = fs_create,
				.create_if_absent = fs_create_if_absent,
				.replace = fs_replace,
				.list = fs_list,
				.remove = fs_remove,
				.remove_all = fs_remove_all,
				.stat = fs_stat,
				.make_dirs = fs_make_dirs,
				.canonical = fs_canonical,
			},
		.inner = inner,
	};
}

void fault_storage_arm(fault_storage *fs, long fail_at, bool sticky)
{
	fs->calls = 0;
	fs->fail_at = fail_at;
	fs->sticky = sticky;
	fs->injected = 0;
}
