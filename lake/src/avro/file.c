/*
 * file.c: Avro object container files: the writer and the reader.
 *
 * A file is the magic "Obj\x01", a metadata map (avro.schema, avro.codec and
 * whatever the application adds; Iceberg puts its table schema and partition
 * spec there), a 16-byte sync marker, then blocks of (record count, byte
 * size, possibly compressed records, sync marker).
 *
 * The reader fetches the header with growing prefix reads (headers are a few
 * kilobytes, but nothing says how long), then one block at a time: memory is
 * bounded by the largest block, and every count and size is checked against
 * what the file can still hold before anything is allocated.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <unistd.h>

#include "avro/avro_internal.h"

#define AVRO_MAGIC "Obj\x01"
#define AVRO_SYNC_SIZE 16
#define DEFAULT_BLOCK_BYTES ((size_t)1 << 20)
#define DEFAULT_BLOCK_RECORDS 10000
#define HEADER_FIRST_READ 4096
/* Headers hold a schema and a few properties; a longer one is refused rather than read. */
#define HEADER_MAX_BYTES ((size_t)64 << 20)
/* A block's records stay under this, so even incompressible blocks fit AVRO_MAX_BLOCK_BYTES. */
#define WRITER_MAX_BLOCK (AVRO_MAX_BLOCK_BYTES / 2)
/* Values a block may decode to, beyond two per byte: room for records of nulls. */
#define BLOCK_VALUE_SLACK 65536

/* -------------------------------------------------------------- writer */

struct tl_avro_writer {
	tl_output *out;
	const tl_avro_schema *schema;
	tl_avro_codec codec;
	uint8_t sync[AVRO_SYNC_SIZE];
	tl_buf block;       /* encoded records of the open block */
	tl_buf staged;      /* the block as written: header, compressed data, sync */
	uint32_t block_records;
	size_t limit_bytes;
	uint32_t limit_records;
	int64_t records;
	bool broken;        /* a write failed: the file cannot be completed */
	bool closed;
};

static int random_sync(uint8_t *sync, tl_error *err)
{
	size_t got = 0;
	while (got < AVRO_SYNC_SIZE) {
		ssize_t n = getrandom(sync + got, AVRO_SYNC_SIZE - got, 0);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		got += (size_t)n;
	}
	if (got == AVRO_SYNC_SIZE)
		return 0;
	int fd = open("/dev/urandom", O_RDONLY | O_CLOEXEC);
	if (fd >= 0) {
		ssize_t n = read(fd, sync, AVRO_SYNC_SIZE);
		close(fd);
		if (n == AVRO_SYNC_SIZE)
			return 0;
	}
	return tl_error_set(err, TL_ERR_IO, "Avro: no random bytes for the sync marker: %s", strerror(errno));
}

static void append_string(tl_buf *b, const void *p, size_t len)
{
	avro_write_long(b, (int64_t)len);
	tl_buf_append(b, p, len);
}

tl_avro_writer *tl_avro_writer_open(tl_output *out, const tl_avro_schema *schema, tl_avro_codec codec,
                                    const tl_avro_meta *meta, size_t n_meta, tl_error *err)
{
	const char *json = tl_avro_schema_json(schema);
	if (json == NULL) {
		tl_error_set(err, TL_ERR_INVALID, "Avro writer: the schema must be the root returned by tl_avro_schema_parse");
		return NULL;
	}
	if ((unsigned)codec > TL_AVRO_CODEC_ZSTD) {
		tl_error_set(err, TL_ERR_INVALID, "Avro writer: unknown codec %d", (int)codec);
		return NULL;
	}
	for (size_t i = 0; i < n_meta; i++) {
		if (meta[i].key == NULL || strncmp(meta[i].key, "avro.", 5) == 0) {
			tl_error_set(err, TL_ERR_INVALID, "Avro writer: metadata key \"%s\" is reserved",
			             meta[i].key ? meta[i].key : "(null)");
			return NULL;
		}
		for (size_t j = 0; j < i; j++)
			if (strcmp(meta[i].key, meta[j].key) == 0) {
				tl_error_set(err, TL_ERR_INVALID, "Avro writer: metadata key \"%s\" given twice", meta[i].key);
				return NULL;
			}
	}
	tl_avro_writer *w = tl_calloc(1, sizeof(*w));
	if (w == NULL) {
		tl_error_nomem(err, "opening an Avro writer");
		return NULL;
	}
	w->out = out;
	w->schema = schema;
	w->codec = codec;
	w->limit_bytes = DEFAULT_BLOCK_BYTES;
	w->limit_records = DEFAULT_BLOCK_RECORDS;
	tl_buf_init(&w->block);
	tl_buf_init(&w->staged);
	if (random_sync(w->sync, err) != 0) {
		tl_avro_writer_free(w);
		return NULL;
	}
	tl_buf *h = &w->staged;
	tl_buf_append(h, AVRO_MAGIC, 4);
	avro_write_long(h, (int64_t)n_meta + 2);
	append_string(h, "avro.schema", 11);
	append_string(h, json, strlen(json));
	append_string(h, "avro.codec", 10);
	append_string(h, tl_avro_codec_name(codec), strlen(tl_avro_codec_name(codec)));
	for (size_t i = 0; i < n_meta; i++) {
		append_string(h, meta[i].key, strlen(meta[i].key));
		append_string(h, meta[i].value.ptr, meta[i].value.len);
	}
	avro_write_long(h, 0);
	tl_buf_append(h, w->sync, AVRO_SYNC_SIZE);
	if (tl_buf_check(h, err, "writing an Avro header") < 0) {
		tl_avro_writer_free(w);
		return NULL;
	}
	if (tl_output_write(out, h->data, h->len, err) != 0) {
		tl_error_prefix(err, "writing Avro header");
		tl_avro_writer_free(w);
		return NULL;
	}
	return w;
}

void tl_avro_writer_set_block_limits(tl_avro_writer *w, size_t bytes, uint32_t records)
{
	w->limit_bytes = bytes == 0 ? 1 : bytes > WRITER_MAX_BLOCK ? WRITER_MAX_BLOCK : bytes;
	w->limit_records = records > 0 ? records : 1;
}

static int flush_block(tl_avro_writer *w, tl_error *err)
{
	if (w->block_records == 0)
		return 0;
	tl_buf_reset(&w->staged);
	avro_write_long(&w->staged, w->block_records);
	tl_buf compressed;
	tl_buf_init(&compressed);
	int rc = avro_compress(w->codec, w->block.data, w->block.len, &compressed, err);
	if (rc == 0) {
		avro_write_long(&w->staged, (int64_t)compressed.len);
		tl_buf_append(&w->staged, compressed.data, compressed.len);
		tl_buf_append(&w->staged, w->sync, AVRO_SYNC_SIZE);
		rc = tl_buf_check(&w->staged, err, "writing an Avro block");
	}
	if (rc == 0) {
		rc = tl_output_write(w->out, w->staged.data, w->staged.len, err);
	}
	tl_buf_free(&compressed);
	if (rc != 0) {
		w->broken = true;
		tl_error_prefix(err, "writing Avro block");
		return -1;
	}
	tl_buf_reset(&w->block);
	w->block_records = 0;
	return 0;
}

int tl_avro_writer_append(tl_avro_writer *w, const tl_avro_value *record, tl_error *err)
{
	if (w->broken || w->closed)
		return tl_error_set(err, TL_ERR_INVALID, "Avro writer: %s", w->closed ? "already closed" : "an earlier write failed");
	size_t before = w->block.len;
	if (tl_avro_encode(&w->block, w->schema, record, err) != 0) {
		tl_error_prefix(err, "record %lld", (long long)w->records);
		return -1;
	}
	if (tl_buf_failed(&w->block)) {
		w->broken = true; /* the block lost bytes: nothing more can be written after it */
		return tl_error_nomem(err, "encoding Avro record %lld", (long long)w->records);
	}
	if (w->block.len > WRITER_MAX_BLOCK) {
		size_t encoded = w->block.len - before;
		w->block.len = before;
		if (encoded > WRITER_MAX_BLOCK)
			return tl_error_set(err, TL_ERR_INVALID, "Avro writer: record %lld encodes to %zu bytes, over the %zu limit",
			                    (long long)w->records, encoded, WRITER_MAX_BLOCK);
		/* Close the block without it and start the next one with it. */
		if (flush_block(w, err) != 0 || tl_avro_encode(&w->block, w->schema, record, err) != 0)
			return -1;
	}
	w->records++;
	w->block_records++;
	if (w->block.len >= w->limit_bytes || w->block_records >= w->limit_records)
		return flush_block(w, err);
	return 0;
}

int tl_avro_writer_close(tl_avro_writer *w, tl_error *err)
{
	if (w->broken)
		return tl_error_set(err, TL_ERR_INVALID, "Avro writer: an earlier write failed");
	if (w->closed)
		return 0;
	if (flush_block(w, err) != 0)
		return -1;
	w->closed = true;
	return 0;
}

void tl_avro_writer_free(tl_avro_writer *w)
{
	if (w == NULL)
		return;
	tl_buf_free(&w->block);
	tl_buf_free(&w->staged);
	tl_free(w);
}

int64_t tl_avro_writer_records(const tl_avro_writer *w)
{
	return w->records;
}

/* -------------------------------------------------------------- reader */

struct tl_avro_reader {
	tl_input *in;
	uint64_t pos;           /* file offset of the next block */
	tl_buf header;          /* the header bytes; metadata values point here */
	tl_arena meta_arena;    /* metadata keys */
	tl_avro_meta *meta;
	size_t n_meta;
	tl_avro_schema *schema;
	tl_avro_codec codec;
	uint8_t sync[AVRO_SYNC_SIZE];
	tl_buf raw;             /* the current block as stored */
	tl_buf block;           /* ... and decompressed */
	avro_cursor cur;        /* the next record in block */
	uint64_t records_left;  /* in the current block */
	uint64_t budget;        /* values the current block may still decode to */
	uint64_t block_index;
	tl_arena arena;         /* the current record's values */
	tl_avro_value value;
};

static void forget_meta(tl_avro_reader *r)
{
	tl_free(r->meta);
	r->meta = NULL;
	r->n_meta = 0;
	tl_arena_reset(&r->meta_arena);
}

/* Parses the metadata map at c into r->meta; views point into the header buffer. */
static int parse_meta(tl_avro_reader *r, avro_cursor *c, tl_error *err)
{
	size_t cap = 0;
	for (;;) {
		int64_t count = 0;
		if (avro_read_long(c, &count, "header metadata count", err) != 0)
			return -1;
		if (count == 0)
			return 0;
		if (count < 0) {
			uint64_t size = 0;
			if (count == INT64_MIN)
				return tl_error_set(err, TL_ERR_CORRUPT, "Avro: header metadata count out of range");
			count = -count;
			if (avro_read_size(c, &size, "header metadata size", err) != 0)
				return -1;
		}
		/* Each entry takes at least two bytes (two lengths). */
		if ((uint64_t)count > (uint64_t)(c->end - c->p) / 2) {
			c->truncated = true;
			return tl_error_set(err, TL_ERR_CORRUPT, "Avro: header claims %lld metadata entries, more than it holds",
			                    (long long)count);
		}
		for (int64_t i = 0; i < count; i++) {
			uint64_t klen = 0, vlen = 0;
			if (avro_read_size(c, &klen, "metadata key length", err) != 0)
				return -1;
			const uint8_t *key = c->p;
			c->p += klen;
			if (avro_read_size(c, &vlen, "metadata value length", err) != 0)
				return -1;
			if (vlen > UINT32_MAX)
				return tl_error_set(err, TL_ERR_CORRUPT, "Avro: metadata value longer than 4 GiB");
			if (memchr(key, '\0', klen) != NULL)
				return tl_error_set(err, TL_ERR_CORRUPT, "Avro: metadata key contains a NUL byte");
			if (r->n_meta == cap) {
				size_t grown = cap ? cap * 2 : 8;
				void *meta = tl_realloc(r->meta, grown * sizeof(*r->meta));
				if (meta == NULL)
					return tl_error_nomem(err, "reading Avro metadata");
				r->meta = meta;
				cap = grown;
			}
			char *k = tl_arena_alloc(&r->meta_arena, klen + 1);
			if (k == NULL)
				return tl_error_nomem(err, "reading Avro metadata");
			memcpy(k, key, klen);
			k[klen] = '\0';
			if (tl_avro_reader_meta(r, k) != NULL)
				return tl_error_set(err, TL_ERR_CORRUPT, "Avro: metadata key \"%.100s\" appears twice", k);
			r->meta[r->n_meta].key = k;
			r->meta[r->n_meta].value = (tl_bytes){c->p, (uint32_t)vlen};
			r->n_meta++;
			c->p += vlen;
		}
	}
}

/* Parses the header from the bytes read so far; c->truncated asks for more. */
static int parse_header(tl_avro_reader *r, avro_cursor *c, tl_error *err)
{
	if (c->end - c->p < 4) {
		c->truncated = true;
		return tl_error_set(err, TL_ERR_CORRUPT, "Avro: file too short for the magic bytes");
	}
	if (memcmp(c->p, AVRO_MAGIC, 4) != 0)
		return tl_error_set(err, TL_ERR_CORRUPT, "Avro: not an Avro container file (bad magic bytes)");
	c->p += 4;
	if (parse_meta(r, c, err) != 0)
		return -1;
	if (c->end - c->p < AVRO_SYNC_SIZE) {
		c->truncated = true;
		return tl_error_set(err, TL_ERR_CORRUPT, "Avro: header ends before its sync marker");
	}
	memcpy(r->sync, c->p, AVRO_SYNC_SIZE);
	c->p += AVRO_SYNC_SIZE;
	return 0;
}

static int read_header(tl_avro_reader *r, tl_error *err)
{
	uint64_t size = r->in->size;
	size_t want = size < HEADER_FIRST_READ ? (size_t)size : HEADER_FIRST_READ;
	for (;;) {
		tl_buf_reset(&r->header);
		if (tl_buf_reserve(&r->header, want ? want : 1) < 0)
			return tl_error_nomem(err, "for an Avro file header");
		if (tl_input_read(r->in, 0, r->header.data, want, err) != 0)
			return -1;
		r->header.len = want;
		avro_cursor c = {r->header.data, r->header.data + want, false};
		tl_error attempt;
		tl_error_clear(&attempt);
		if (parse_header(r, &c, &attempt) == 0) {
			r->pos = (uint64_t)(c.p - r->header.data);
			return 0;
		}
		forget_meta(r);
		if (!c.truncated || want == size)
			return tl_error_set(err, attempt.code, "%s", attempt.message);
		if (want >= HEADER_MAX_BYTES)
			return tl_error_set(err, TL_ERR_CORRUPT, "Avro: header is longer than %zu bytes (%s)", HEADER_MAX_BYTES,
			                    attempt.message);
		want = size / 4 < want ? (size_t)size : want * 4;
		if (want > HEADER_MAX_BYTES)
			want = HEADER_MAX_BYTES;
	}
}

static int load_schema_and_codec(tl_avro_reader *r, tl_error *err)
{
	const tl_bytes *schema = tl_avro_reader_meta(r, "avro.schema");
	if (schema == NULL)
		return tl_error_set(err, TL_ERR_CORRUPT, "Avro: header has no avro.schema");
	tl_error perr;
	tl_error_clear(&perr);
	r->schema = tl_avro_schema_parse((const char *)schema->ptr, schema->len, &perr);
	if (r->schema == NULL)
		return tl_error_set(err, perr.code == TL_ERR_NOMEM ? TL_ERR_NOMEM : TL_ERR_CORRUPT,
		                    "Avro: header avro.schema: %s", perr.message);
	const tl_bytes *codec = tl_avro_reader_meta(r, "avro.codec");
	r->codec = TL_AVRO_CODEC_NULL;
	if (codec != NULL && avro_codec_parse(codec->ptr, codec->len, &r->codec, err) != 0)
		return -1;
	return 0;
}

tl_avro_reader *tl_avro_reader_open(tl_input *in, tl_error *err)
{
	tl_avro_reader *r = tl_calloc(1, sizeof(*r));
	if (r == NULL) {
		tl_error_nomem(err, "opening %s", in->name ? in->name : "an Avro file");
		return NULL;
	}
	r->in = in;
	tl_buf_init(&r->header);
	tl_buf_init(&r->raw);
	tl_buf_init(&r->block);
	tl_arena_init(&r->meta_arena, 1024);
	tl_arena_init(&r->arena, 16384);
	if (read_header(r, err) != 0 || load_schema_and_codec(r, err) != 0) {
		tl_error_prefix(err, "reading %s", in->name ? in->name : "Avro file");
		tl_avro_reader_free(r);
		return NULL;
	}
	return r;
}

void tl_avro_reader_free(tl_avro_reader *r)
{
	if (r == NULL)
		return;
	forget_meta(r);
	tl_arena_free(&r->meta_arena);
	tl_arena_free(&r->arena);
	tl_avro_schema_free(r->schema);
	tl_buf_free(&r->header);
	tl_buf_free(&r->raw);
	tl_buf_free(&r->block);
	tl_free(r);
}

const tl_avro_schema *tl_avro_reader_schema(const tl_avro_reader *r)
{
	return r->schema;
}

tl_avro_codec tl_avro_reader_codec(const tl_avro_reader *r)
{
	return r->codec;
}

const tl_bytes *tl_avro_reader_meta(const tl_avro_reader *r, const char *key)
{
	for (size_t i = 0; i < r->n_meta; i++)
		if (strcmp(r->meta[i].key, key) == 0)
			return &r->meta[i].value;
	return NULL;
}

size_t tl_avro_reader_meta_count(const tl_avro_reader *r)
{
	return r->n_meta;
}

const tl_avro_meta *tl_avro_reader_meta_at(const tl_avro_reader *r, size_t i)
{
	return i < r->n_meta ? &r->meta[i] : NULL;
}

/* Reads, checks and decompresses the block at r->pos. */
static int load_block(tl_avro_reader *r, tl_error *err)
{
	uint64_t size = r->in->size, start = r->pos;
	uint8_t head[20];
	size_t n = size - start < sizeof(head) ? (size_t)(size - start) : sizeof(head);
	if (tl_input_read(r->in, start, head, n, err) != 0)
		return -1;
	avro_cursor c = {head, head + n, false};
	int64_t count = 0;
	uint64_t data_len = 0;
	if (avro_read_long(&c, &count, "block record count", err) != 0)
		return -1;
	if (count < 0)
		return tl_error_set(err, TL_ERR_CORRUPT, "Avro: block at offset %llu has a negative record count",
		                    (unsigned long long)start);
	int64_t signed_len = 0;
	if (avro_read_long(&c, &signed_len, "block size", err) != 0)
		return -1;
	if (signed_len < 0)
		return tl_error_set(err, TL_ERR_CORRUPT, "Avro: block at offset %llu has a negative size",
		                    (unsigned long long)start);
	data_len = (uint64_t)signed_len;
	uint64_t header_len = (uint64_t)(c.p - head);
	uint64_t room = size - start - header_len;
	if (room < AVRO_SYNC_SIZE || data_len > room - AVRO_SYNC_SIZE)
		return tl_error_set(err, TL_ERR_CORRUPT, "Avro: block at offset %llu claims %llu bytes, past the end of the file",
		                    (unsigned long long)start, (unsigned long long)data_len);
	if (data_len > AVRO_MAX_BLOCK_BYTES)
		return tl_error_set(err, TL_ERR_CORRUPT, "Avro: block at offset %llu is %llu bytes, over the %zu limit",
		                    (unsigned long long)start, (unsigned long long)data_len, AVRO_MAX_BLOCK_BYTES);
	tl_buf_reset(&r->raw);
	if (tl_buf_reserve(&r->raw, data_len + AVRO_SYNC_SIZE) < 0)
		return tl_error_nomem(err, "for an Avro block");
	if (tl_input_read(r->in, start + header_len, r->raw.data, data_len + AVRO_SYNC_SIZE, err) != 0)
		return -1;
	r->raw.len = data_len + AVRO_SYNC_SIZE;
	if (memcmp(r->raw.data + data_len, r->sync, AVRO_SYNC_SIZE) != 0)
		return tl_error_set(err, TL_ERR_CORRUPT, "Avro: block at offset %llu does not end with the file's sync marker",
		                    (unsigned long long)start);
	if (avro_decompress(r->codec, r->raw.data, data_len, &r->block, err) != 0) {
		tl_error_prefix(err, "block at offset %llu", (unsigned long long)start);
		return -1;
	}
	r->budget = 2 * (uint64_t)r->block.len + BLOCK_VALUE_SLACK;
	if ((uint64_t)count > r->budget)
		return tl_error_set(err, TL_ERR_CORRUPT, "Avro: block at offset %llu claims %lld records in %zu bytes",
		                    (unsigned long long)start, (long long)count, r->block.len);
	r->cur = (avro_cursor){r->block.data, r->block.data + r->block.len, false};
	r->records_left = (uint64_t)count;
	r->pos = start + header_len + data_len + AVRO_SYNC_SIZE;
	r->block_index++;
	return 0;
}

int tl_avro_reader_next(tl_avro_reader *r, const tl_avro_value **out, tl_error *err)
{
	tl_arena_reset(&r->arena);
	while (r->records_left == 0) {
		if (r->cur.p != r->cur.end)
			return tl_error_set(err, TL_ERR_CORRUPT, "Avro: %s: block %llu has %zu bytes after its last record",
			                    r->in->name ? r->in->name : "file", (unsigned long long)r->block_index,
			                    (size_t)(r->cur.end - r->cur.p));
		if (r->pos >= r->in->size)
			return 0;
		/* One check per block: manifests and manifest lists are read here. */
		if (tl_check_interrupt(err) < 0)
			return -1;
		if (load_block(r, err) != 0) {
			tl_error_prefix(err, "reading %s", r->in->name ? r->in->name : "Avro file");
			return -1;
		}
	}
	if (avro_decode_budgeted(&r->cur, r->schema, &r->arena, &r->budget, &r->value, err) != 0) {
		tl_error_prefix(err, "reading %s: block %llu", r->in->name ? r->in->name : "Avro file",
		                (unsigned long long)r->block_index);
		return -1;
	}
	r->records_left--;
	*out = &r->value;
	return 1;
}
