/*
 * local.c: tl_input and tl_output over local files and memory, and the
 * local file system's tl_storage: the only place in the lake library that
 * calls POSIX file functions on lake paths.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tierlake/buf.h"
#include "tierlake/io.h"
#include "tierlake/storage.h"

typedef struct file_input {
	tl_input base;
	int fd;
	char *path;
} file_input;

static int file_read_at(tl_input *in, uint64_t offset, void *buf, size_t len, tl_error *err)
{
	file_input *f = (file_input *)in;
	if (offset > in->size || len > in->size - offset)
		return tl_error_set(err, TL_ERR_CORRUPT,
		                    "%s: read of %zu bytes at offset %llu is past the end of the file (%llu bytes)",
		                    in->name, len, (unsigned long long)offset, (unsigned long long)in->size);
	uint8_t *p = buf;
	while (len > 0) {
		ssize_t n = pread(f->fd, p, len, (off_t)offset);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return tl_error_set(err, TL_ERR_IO, "%s: read failed: %s", in->name, strerror(errno));
		}
		if (n == 0)
			return tl_error_set(err, TL_ERR_IO, "%s: file shrank while being read", in->name);
		p += n;
		offset += (uint64_t)n;
		len -= (size_t)n;
	}
	return 0;
}

static void file_input_close(tl_input *in)
{
	file_input *f = (file_input *)in;
	close(f->fd);
	tl_free(f->path);
	tl_free(f);
}

tl_input *tl_input_open_file(const char *path, tl_error *err)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		tl_error_set(err, errno == ENOENT ? TL_ERR_NOT_FOUND : TL_ERR_IO, "%s: cannot open: %s", path,
		             strerror(errno));
		return NULL;
	}
	struct stat st;
	if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
		tl_error_set(err, TL_ERR_IO, "%s: not a regular file", path);
		close(fd);
		return NULL;
	}
	file_input *f = tl_calloc(1, sizeof(*f));
	char *copy = tl_strdup(path);
	if (f == NULL || copy == NULL) {
		tl_free(f);
		tl_free(copy);
		close(fd);
		tl_error_nomem(err, "opening %s", path);
		return NULL;
	}
	f->fd = fd;
	f->path = copy;
	f->base.read_at = file_read_at;
	f->base.close = file_input_close;
	f->base.size = (uint64_t)st.st_size;
	f->base.name = f->path;
	return &f->base;
}

typedef struct memory_input {
	tl_input base;
	const uint8_t *data;
	char *name;
} memory_input;

static int memory_read_at(tl_input *in, uint64_t offset, void *buf, size_t len, tl_error *err)
{
	memory_input *m = (memory_input *)in;
	if (offset > in->size || len > in->size - offset)
		return tl_error_set(err, TL_ERR_CORRUPT, "%s: read of %zu bytes at offset %llu is past the end (%llu bytes)",
		                    in->name, len, (unsigned long long)offset, (unsigned long long)in->size);
	if (len)
		memcpy(buf, m->data + offset, len);
	return 0;
}

static void memory_input_close(tl_input *in)
{
	memory_input *m = (memory_input *)in;
	tl_free(m->name);
	tl_free(m);
}

tl_input *tl_input_from_memory(const void *data, size_t len, const char *name)
{
	memory_input *m = tl_calloc(1, sizeof(*m));
	char *copy = tl_strdup(name ? name : "memory");
	if (m == NULL || copy == NULL) {
		tl_free(m);
		tl_free(copy);
		return NULL;
	}
	m->data = data;
	m->name = copy;
	m->base.read_at = memory_read_at;
	m->base.close = memory_input_close;
	m->base.size = len;
	m->base.name = m->name;
	return &m->base;
}

void tl_input_close(tl_input *in)
{
	if (in)
		in->close(in);
}

typedef struct file_output {
	tl_output base;
	int fd;
	char *path;
	tl_buf pending;   /* coalesces small writes into large ones */
} file_output;

#define FILE_OUTPUT_FLUSH_BYTES (1 << 20)

static int file_flush(file_output *f, tl_error *err)
{
	const uint8_t *p = f->pending.data;
	size_t len = f->pending.len;
	while (len > 0) {
		ssize_t n = write(f->fd, p, len);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return tl_error_set(err, TL_ERR_IO, "%s: write failed: %s", f->path, strerror(errno));
		}
		p += n;
		len -= (size_t)n;
	}
	tl_buf_reset(&f->pending);
	return 0;
}

static int file_write(tl_output *out, const void *buf, size_t len, tl_error *err)
{
	file_output *f = (file_output *)out;
	tl_buf_append(&f->pending, buf, len);
	if (tl_buf_failed(&f->pending))
		return tl_error_nomem(err, "writing %s", f->path);
	out->offset += len;
	if (f->pending.len >= FILE_OUTPUT_FLUSH_BYTES)
		return file_flush(f, err);
	return 0;
}

static int file_finish(tl_output *out, tl_error *err)
{
	file_output *f = (file_output *)out;
	if (file_flush(f, err) < 0)
		return -1;
	if (fsync(f->fd) != 0)
		return tl_error_set(err, TL_ERR_IO, "%s: fsync failed: %s", f->path, strerror(errno));
	return 0;
}

static void file_output_close(tl_output *out)
{
	file_output *f = (file_output *)out;
	close(f->fd);
	tl_buf_free(&f->pending);
	tl_free(f->path);
	tl_free(f);
}

tl_output *tl_output_create_file(const char *path, int exclusive, tl_error *err)
{
	int flags = O_WRONLY | O_CREAT | O_CLOEXEC | (exclusive ? O_EXCL : O_TRUNC);
	int fd = open(path, flags, 0644);
	if (fd < 0) {
		tl_error_set(err, errno == EEXIST ? TL_ERR_CONFLICT : TL_ERR_IO, "%s: cannot create: %s", path,
		             strerror(errno));
		return NULL;
	}
	file_output *f = tl_calloc(1, sizeof(*f));
	char *copy = tl_strdup(path);
	if (f == NULL || copy == NULL) {
		tl_free(f);
		tl_free(copy);
		close(fd);
		unlink(path); /* just created: nothing was written to it */
		tl_error_nomem(err, "creating %s", path);
		return NULL;
	}
	f->fd = fd;
	f->path = copy;
	tl_buf_init(&f->pending);
	f->base.write = file_write;
	f->base.finish = file_finish;
	f->base.close = file_output_close;
	f->base.name = f->path;
	return &f->base;
}

typedef struct buffer_output {
	tl_output base;
	tl_buf *buf;
	char *name;
} buffer_output;

static int buffer_write(tl_output *out, const void *data, size_t len, tl_error *err)
{
	buffer_output *b = (buffer_output *)out;
	tl_buf_append(b->buf, data, len);
	if (tl_buf_failed(b->buf))
		return tl_error_nomem(err, "writing %s", b->name);
	out->offset += len;
	return 0;
}

static int buffer_finish(tl_output *out, tl_error *err)
{
	return 0;
}

static void buffer_output_close(tl_output *out)
{
	buffer_output *b = (buffer_output *)out;
	tl_free(b->name);
	tl_free(b);
}

tl_output *tl_output_to_buffer(tl_buf *buf, const char *name)
{
	buffer_output *b = tl_calloc(1, sizeof(*b));
	char *copy = tl_strdup(name ? name : "buffer");
	if (b == NULL || copy == NULL) {
		tl_free(b);
		tl_free(copy);
		return NULL;
	}
	b->buf = buf;
	b->name = copy;
	b->base.write = buffer_write;
	b->base.finish = buffer_finish;
	b->base.close = buffer_output_close;
	b->base.name = b->name;
	return &b->base;
}

void tl_output_close(tl_output *out)
{
	if (out)
		out->close(out);
}

char *tl_local_path(const char *uri, tl_error *err)
{
	const char *path = uri;
	if (strncmp(uri, "file://", 7) == 0)
		path = uri + 7;
	else if (strncmp(uri, "file:", 5) == 0)
		path = uri + 5;
	else if (strstr(uri, "://") != NULL) {
		tl_error_set(err, TL_ERR_UNSUPPORTED, "cannot read %s: only local files (file://) are supported",
		             uri);
		return NULL;
	}
	char *copy = tl_strdup(path);
	if (copy == NULL)
		tl_error_nomem(err, "for the path of %s", uri);
	return copy;
}

tl_input *tl_input_open_uri(const char *uri, tl_error *err)
{
	return tl_storage_open_read(uri, err);
}

/* ------------------------------------------------------- local storage */

/* The local path of a location, or NULL with err set. */
static char *local_path_of(const char *location, tl_error *err)
{
	return tl_local_path(location, err);
}

static tl_error_code errno_code(int e)
{
	return e == ENOENT ? TL_ERR_NOT_FOUND : e == EEXIST ? TL_ERR_CONFLICT : TL_ERR_IO;
}

static tl_input *local_open_read(tl_storage *s, const char *location, tl_error *err)
{
	char *path = local_path_of(location, err);
	tl_input *in = path ? tl_input_open_file(path, err) : NULL;
	tl_free(path);
	return in;
}

static tl_output *local_create(tl_storage *s, const char *location, int mode, tl_error *err)
{
	char *path = local_path_of(location, err);
	tl_output *out = path ? tl_output_create_file(path, mode == TL_STORAGE_CREATE_EXCLUSIVE, err) : NULL;
	tl_free(path);
	return out;
}

/*
 * A hidden, unique name beside path ("<dir>/.<name>-<random>.tmp") that no
 * metadata listing mistakes for a version file.
 */
static char *temp_beside(const char *path, tl_error *err)
{
	unsigned char r[8];
	if (getrandom(r, sizeof(r), 0) != (ssize_t)sizeof(r)) {
		tl_error_set(err, TL_ERR_IO, "cannot name a temporary file for %s: no randomness: %s", path,
		             strerror(errno));
		return NULL;
	}
	const char *slash = strrchr(path, '/');
	int dirlen = slash ? (int)(slash - path + 1) : 0;
	tl_buf b;
	tl_buf_init(&b);
	tl_buf_printf(&b, "%.*s.%s-", dirlen, path, slash ? slash + 1 : path);
	for (size_t i = 0; i < sizeof(r); i++)
		tl_buf_printf(&b, "%02x", r[i]);
	tl_buf_printf(&b, ".tmp%c", '\0');
	if (tl_buf_check(&b, err, "naming a temporary file") < 0) {
		tl_buf_free(&b);
		return NULL;
	}
	return (char *)b.data;
}

/* Writes bytes to a new file at path and makes them durable; removes it on failure. */
static int write_new_file(const char *path, const void *data, size_t len, tl_error *err)
{
	tl_output *out = tl_output_create_file(path, 1, err);
	if (out == NULL)
		return -1;
	int rc = tl_output_write(out, data, len, err);
	if (rc == 0)
		rc = out->finish(out, err);
	tl_output_close(out);
	if (rc < 0)
		unlink(path);
	return rc;
}

/*
 * Makes a new directory entry durable, so that what returned survives a
 * crash. Best effort: once the name exists the change is visible and has
 * happened, so a failed sync must not report it as failed (a committer
 * would clean up files the published metadata names).
 */
static void sync_parent_directory(const char *path)
{
	const char *slash = strrchr(path, '/');
	char *dir = slash ? tl_strdup(path) : tl_strdup(".");
	if (dir == NULL)
		return; /* best effort, as the comment says */
	if (slash)
		dir[slash == path ? 1 : slash - path] = '\0';
	int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd >= 0) {
		(void)fsync(fd);
		close(fd);
	}
	tl_free(dir);
}

/*
 * Gives data[0..len) the name path through a temporary file beside it,
 * durable before it gets the name, so no reader sees it half-written.
 * Exclusive: link(), which fails if the name exists, atomically (rename()
 * would replace a racing winner's file). Otherwise rename() over it.
 */
static int publish_through_temp(const char *location, const void *data, size_t len, bool exclusive,
                                tl_error *err)
{
	char *path = local_path_of(location, err);
	char *temp = path ? temp_beside(path, err) : NULL;
	int rc = temp ? write_new_file(temp, data, len, err) : -1;
	if (rc == 0 && exclusive) {
		if (link(temp, path) != 0)
			rc = tl_error_set(err, errno_code(errno), "cannot create %s: %s", path,
			                  errno == EEXIST ? "it exists already" : strerror(errno));
		unlink(temp);
	} else if (rc == 0 && rename(temp, path) != 0) {
		rc = tl_error_set(err, TL_ERR_IO, "cannot replace %s: %s", path, strerror(errno));
		unlink(temp);
	}
	if (rc == 0)
		sync_parent_directory(path);
	tl_free(temp);
	tl_free(path);
	return rc;
}

static int local_create_if_absent(tl_storage *s, const char *location, const void *data, size_t len,
                                  tl_error *err)
{
	return publish_through_temp(location, data, len, true, err);
}

static int local_replace(tl_storage *s, const char *location, const void *data, size_t len, tl_error *err)
{
	return publish_through_temp(location, data, len, false, err);
}

static int64_t mtime_ms(const struct stat *st)
{
	return (int64_t)st->st_mtim.tv_sec * 1000 + st->st_mtim.tv_nsec / 1000000;
}

static int list_add(tl_storage_list *out, size_t *cap, const char *name, const struct stat *st, tl_error *err)
{
	if (out->count == *cap) {
		size_t grown = *cap ? 2 * *cap : 16;
		tl_storage_entry *entries = tl_realloc(out->entries, grown * sizeof(*out->entries));
		if (entries == NULL)
			return tl_error_nomem(err, "listing a directory");
		out->entries = entries;
		*cap = grown;
	}
	char *copy = tl_strdup(name);
	if (copy == NULL)
		return tl_error_nomem(err, "listing a directory");
	bool is_dir = S_ISDIR(st->st_mode);
	out->entries[out->count++] = (tl_storage_entry){copy, is_dir ? 0 : (uint64_t)st->st_size, is_dir, mtime_ms(st)};
	return 0;
}

/* Appends dir's entries (names prefixed with `rel`) to out; descends into subdirectories when recursive. */
static int list_directory(const char *dir, const char *rel, bool recursive, tl_storage_list *out, size_t *cap,
                          tl_error *err)
{
	DIR *d = opendir(dir);
	if (d == NULL)
		return tl_error_set(err, errno_code(errno), "cannot list %s: %s", dir, strerror(errno));
	int rc = 0;
	tl_buf path, name;
	tl_buf_init(&path);
	tl_buf_init(&name);
	for (struct dirent *e; rc == 0 && (e = readdir(d)) != NULL;) {
		if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
			continue;
		tl_buf_reset(&path);
		tl_buf_printf(&path, "%s/%s%c", dir, e->d_name, '\0');
		tl_buf_reset(&name);
		tl_buf_printf(&name, "%s%s%c", rel, e->d_name, '\0');
		if (tl_buf_failed(&path) || tl_buf_failed(&name)) {
			rc = tl_error_nomem(err, "listing %s", dir);
			break;
		}
		struct stat st;
		if (lstat((const char *)path.data, &st) != 0)
			continue; /* removed while listing */
		bool is_dir = S_ISDIR(st.st_mode);
		if (!is_dir || !recursive) {
			rc = list_add(out, cap, (const char *)name.data, &st, err);
			continue;
		}
		name.data[name.len - 1] = '/';
		tl_buf_append_byte(&name, '\0');
		if (tl_buf_failed(&name)) {
			rc = tl_error_nomem(err, "listing %s", dir);
			break;
		}
		rc = list_directory((const char *)path.data, (const char *)name.data, true, out, cap, err);
	}
	closedir(d);
	tl_buf_free(&path);
	tl_buf_free(&name);
	return rc;
}

static int local_list(tl_storage *s, const char *location, int flags, tl_storage_list *out, tl_error *err)
{
	out->entries = NULL;
	out->count = 0;
	char *path = local_path_of(location, err);
	if (path == NULL)
		return -1;
	size_t cap = 0;
	int rc = list_directory(path, "", (flags & TL_STORAGE_LIST_RECURSIVE) != 0, out, &cap, err);
	if (rc < 0)
		tl_storage_list_free(out);
	tl_free(path);
	return rc;
}

static int local_remove(tl_storage *s, const char *location, tl_error *err)
{
	char *path = local_path_of(location, err);
	if (path == NULL)
		return -1;
	int rc = 0;
	if (unlink(path) != 0)
		rc = tl_error_set(err, errno_code(errno), "cannot remove %s: %s", path, strerror(errno));
	tl_free(path);
	return rc;
}

static int remove_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	return remove(path);
}

static int local_remove_all(tl_storage *s, const char *location, tl_error *err)
{
	char *path = local_path_of(location, err);
	if (path == NULL)
		return -1;
	int rc = 0;
	if (nftw(path, remove_entry, 16, FTW_DEPTH | FTW_PHYS) != 0 && errno != ENOENT)
		rc = tl_error_set(err, TL_ERR_IO, "cannot remove %s: %s", path, strerror(errno));
	tl_free(path);
	return rc;
}

static int local_stat(tl_storage *s, const char *location, uint64_t *size, bool *is_dir, tl_error *err)
{
	char *path = local_path_of(location, err);
	if (path == NULL)
		return -1;
	struct stat st;
	int rc = 0;
	if (stat(path, &st) != 0) {
		rc = tl_error_set(err, errno_code(errno), "%s: %s", path, strerror(errno));
	} else {
		if (size)
			*size = S_ISDIR(st.st_mode) ? 0 : (uint64_t)st.st_size;
		if (is_dir)
			*is_dir = S_ISDIR(st.st_mode);
	}
	tl_free(path);
	return rc;
}

static int make_directory(const char *path, tl_error *err)
{
	if (mkdir(path, 0777) == 0)
		return 0;
	struct stat st;
	if (errno == EEXIST && stat(path, &st) == 0 && S_ISDIR(st.st_mode))
		return 0;
	return tl_error_set(err, TL_ERR_IO, "cannot create directory %s: %s", path, strerror(errno));
}

static int local_make_dirs(tl_storage *s, const char *location, tl_error *err)
{
	char *path = local_path_of(location, err);
	if (path == NULL)
		return -1;
	int rc = 0;
	for (char *p = path + 1; rc == 0 && *p; p++) {
		if (*p != '/')
			continue;
		*p = '\0';
		rc = make_directory(path, err);
		*p = '/';
	}
	if (rc == 0)
		rc = make_directory(path, err);
	tl_free(path);
	return rc;
}

static char *local_canonical(tl_storage *s, const char *location, tl_error *err)
{
	char *path = local_path_of(location, err);
	if (path == NULL)
		return NULL;
	/* realpath's result is the C library's memory; the caller frees ours. */
	char *resolved = realpath(path, NULL), *real = NULL;
	if (resolved == NULL)
		tl_error_set(err, errno_code(errno), "cannot resolve %s: %s", path, strerror(errno));
	else if ((real = tl_strdup(resolved)) == NULL)
		tl_error_nomem(err, "resolving a local path");
	free(resolved);
	tl_free(path);
	return real;
}

static tl_storage local_storage = {
	.name = "local",
	.open_read = local_open_read,
	.create = local_create,
	.create_if_absent = local_create_if_absent,
	.replace = local_replace,
	.list = local_list,
	.remove = local_remove,
	.remove_all = local_remove_all,
	.stat = local_stat,
	.make_dirs = local_make_dirs,
	.canonical = local_canonical,
};

tl_storage *tl_storage_local(void)
{
	return &local_storage;
}
