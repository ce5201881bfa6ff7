/*
 * local.c: tl_input and tl_output over local files and memory.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tierlake/buf.h"
#include "tierlake/io.h"

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
	free(f->path);
	free(f);
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
	f->fd = fd;
	f->path = tl_strdup(path);
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
	free(m->name);
	free(m);
}

tl_input *tl_input_from_memory(const void *data, size_t len, const char *name)
{
	memory_input *m = tl_calloc(1, sizeof(*m));
	m->data = data;
	m->name = tl_strdup(name ? name : "memory");
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
	free(f->path);
	free(f);
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
	f->fd = fd;
	f->path = tl_strdup(path);
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
	free(b->name);
	free(b);
}

tl_output *tl_output_to_buffer(tl_buf *buf, const char *name)
{
	buffer_output *b = tl_calloc(1, sizeof(*b));
	b->buf = buf;
	b->name = tl_strdup(name ? name : "buffer");
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
	if (strncmp(uri, "file://", 7) == 0)
		return tl_strdup(uri + 7);
	if (strncmp(uri, "file:", 5) == 0)
		return tl_strdup(uri + 5);
	if (strstr(uri, "://") != NULL) {
		tl_error_set(err, TL_ERR_UNSUPPORTED, "cannot read %s: only local files (file://) are supported",
		             uri);
		return NULL;
	}
	return tl_strdup(uri);
}

tl_input *tl_input_open_uri(const char *uri, tl_error *err)
{
	char *path = tl_local_path(uri, err);
	if (path == NULL)
		return NULL;
	tl_input *in = tl_input_open_file(path, err);
	free(path);
	return in;
}
