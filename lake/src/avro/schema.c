/*
 * schema.c: Avro schema JSON to a tl_avro_schema tree.
 *
 * Every node, name and string of one schema lives in one arena owned by the
 * root, so named-type references (which make the tree a graph, cyclic for
 * recursive records) need no reference counting: the root frees it all.
 */
#include <jansson.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "avro/avro_internal.h"
#include "common/json_load.h"

struct tl_avro_schema_doc {
	tl_arena arena;
	char *json;
};

typedef struct named_type {
	const char *full_name;
	tl_avro_schema *node;
} named_type;

typedef struct parse_ctx {
	tl_arena *arena;
	named_type *names;
	size_t n_names, cap_names;
	tl_error *err;
} parse_ctx;

static const char *const type_names[] = {
	"null", "boolean", "int", "long", "float", "double", "bytes", "string",
	"fixed", "enum", "array", "map", "record", "union",
};

const char *tl_avro_type_name(tl_avro_type type)
{
	if ((unsigned)type < sizeof(type_names) / sizeof(type_names[0]))
		return type_names[type];
	return "unknown";
}

/*
 * Out of memory this gives "" rather than NULL, so the parser goes on
 * without a check at every name; tl_avro_schema_parse sees the failure
 * count and reports TL_ERR_NOMEM instead of whatever followed.
 */
static const char *arena_strdup(tl_arena *a, const char *s)
{
	size_t len = strlen(s);
	char *copy = tl_arena_alloc(a, len + 1);
	if (copy == NULL)
		return "";
	memcpy(copy, s, len + 1);
	return copy;
}

/* NULL with the error set when out of memory. */
static tl_avro_schema *new_node(parse_ctx *ctx, tl_avro_type type)
{
	tl_avro_schema *node = tl_arena_alloc(ctx->arena, sizeof(*node));
	if (node == NULL) {
		tl_error_nomem(ctx->err, "parsing an Avro schema");
		return NULL;
	}
	memset(node, 0, sizeof(*node));
	node->type = type;
	node->element_id = node->key_id = node->value_id = TL_AVRO_NO_ID;
	return node;
}

static tl_avro_schema *lookup_name(parse_ctx *ctx, const char *name, const char *ns)
{
	for (size_t i = 0; i < ctx->n_names; i++)
		if (strcmp(ctx->names[i].full_name, name) == 0)
			return ctx->names[i].node;
	if (ns != NULL && ns[0] != '\0' && strchr(name, '.') == NULL) {
		size_t nl = strlen(ns), len = strlen(name);
		for (size_t i = 0; i < ctx->n_names; i++) {
			const char *full = ctx->names[i].full_name;
			if (strlen(full) == nl + 1 + len && strncmp(full, ns, nl) == 0 && full[nl] == '.' &&
			    strcmp(full + nl + 1, name) == 0)
				return ctx->names[i].node;
		}
	}
	return NULL;
}

/* Gives a named type its full name and registers it, refusing redefinitions. */
static int define_name(parse_ctx *ctx, json_t *obj, tl_avro_schema *node, const char **ns)
{
	json_t *name = json_object_get(obj, "name");
	if (!json_is_string(name) || json_string_length(name) == 0)
		return tl_error_set(ctx->err, TL_ERR_INVALID, "Avro schema: %s type without a \"name\"",
		                    tl_avro_type_name(node->type));
	const char *short_name = json_string_value(name);
	json_t *namespace = json_object_get(obj, "namespace");
	if (namespace != NULL && !json_is_string(namespace) && !json_is_null(namespace))
		return tl_error_set(ctx->err, TL_ERR_INVALID, "Avro schema: \"namespace\" of %s is not a string",
		                    short_name);
	const char *space = json_is_string(namespace) ? json_string_value(namespace) : *ns;
	if (strchr(short_name, '.') != NULL) {
		node->name = arena_strdup(ctx->arena, short_name);
		size_t dot = (size_t)(strrchr(short_name, '.') - short_name);
		char *copy = tl_arena_alloc(ctx->arena, dot + 1);
		if (copy == NULL)
			return tl_error_nomem(ctx->err, "parsing an Avro schema");
		memcpy(copy, short_name, dot);
		copy[dot] = '\0';
		*ns = copy;
	} else if (space != NULL && space[0] != '\0') {
		size_t sl = strlen(space), nl = strlen(short_name);
		char *full = tl_arena_alloc(ctx->arena, sl + nl + 2);
		if (full == NULL)
			return tl_error_nomem(ctx->err, "parsing an Avro schema");
		memcpy(full, space, sl);
		full[sl] = '.';
		memcpy(full + sl + 1, short_name, nl + 1);
		node->name = full;
		*ns = arena_strdup(ctx->arena, space);
	} else {
		node->name = arena_strdup(ctx->arena, short_name);
		*ns = "";
	}
	if (lookup_name(ctx, node->name, NULL) != NULL)
		return tl_error_set(ctx->err, TL_ERR_INVALID, "Avro schema: type %s is defined twice", node->name);
	if (ctx->n_names == ctx->cap_names) {
		size_t cap = ctx->cap_names ? ctx->cap_names * 2 : 16;
		void *names = tl_realloc(ctx->names, cap * sizeof(*ctx->names));
		if (names == NULL)
			return tl_error_nomem(ctx->err, "parsing an Avro schema");
		ctx->names = names;
		ctx->cap_names = cap;
	}
	ctx->names[ctx->n_names].full_name = node->name;
	ctx->names[ctx->n_names].node = node;
	ctx->n_names++;
	return 0;
}

/* An optional integer attribute (Iceberg ids, decimal precision): 0, or -1 if not an int32. */
static int int_attr(parse_ctx *ctx, json_t *obj, const char *key, int32_t *out, const char *what)
{
	json_t *v = json_object_get(obj, key);
	if (v == NULL)
		return 0;
	if (!json_is_integer(v) || json_integer_value(v) < INT32_MIN || json_integer_value(v) > INT32_MAX)
		return tl_error_set(ctx->err, TL_ERR_INVALID, "Avro schema: \"%s\" of %s is not a 32-bit integer",
		                    key, what);
	*out = (int32_t)json_integer_value(v);
	return 0;
}

static tl_avro_schema *parse_node(parse_ctx *ctx, json_t *json, const char *ns, int depth);

static int primitive_type(const char *name, tl_avro_type *out)
{
	for (int t = TL_AVRO_NULL; t <= TL_AVRO_STRING; t++)
		if (strcmp(name, type_names[t]) == 0) {
			*out = (tl_avro_type)t;
			return 0;
		}
	return -1;
}

static int parse_fields(parse_ctx *ctx, json_t *obj, tl_avro_schema *node, const char *ns, int depth)
{
	json_t *fields = json_object_get(obj, "fields");
	if (!json_is_array(fields))
		return tl_error_set(ctx->err, TL_ERR_INVALID, "Avro schema: record %s has no \"fields\" array",
		                    node->name);
	size_t n = json_array_size(fields);
	if (n > UINT32_MAX / 2)
		return tl_error_set(ctx->err, TL_ERR_INVALID, "Avro schema: record %s has too many fields", node->name);
	node->n_fields = (uint32_t)n;
	node->fields = tl_arena_alloc(ctx->arena, (n ? n : 1) * sizeof(tl_avro_field));
	if (node->fields == NULL) {
		node->n_fields = 0;
		return tl_error_nomem(ctx->err, "parsing an Avro schema");
	}
	for (size_t i = 0; i < n; i++) {
		json_t *f = json_array_get(fields, i);
		tl_avro_field *field = &node->fields[i];
		json_t *name = json_object_get(f, "name");
		if (!json_is_object(f) || !json_is_string(name) || json_string_length(name) == 0)
			return tl_error_set(ctx->err, TL_ERR_INVALID, "Avro schema: field %zu of record %s has no name",
			                    i, node->name);
		field->name = arena_strdup(ctx->arena, json_string_value(name));
		for (size_t j = 0; j < i; j++)
			if (strcmp(node->fields[j].name, field->name) == 0)
				return tl_error_set(ctx->err, TL_ERR_INVALID, "Avro schema: record %s has two fields named %s",
				                    node->name, field->name);
		field->field_id = TL_AVRO_NO_ID;
		if (int_attr(ctx, f, "field-id", &field->field_id, field->name) != 0)
			return -1;
		json_t *type = json_object_get(f, "type");
		if (type == NULL)
			return tl_error_set(ctx->err, TL_ERR_INVALID, "Avro schema: field %s of record %s has no type",
			                    field->name, node->name);
		field->type = parse_node(ctx, type, ns, depth + 1);
		if (field->type == NULL) {
			tl_error_prefix(ctx->err, "field %s", field->name);
			return -1;
		}
		json_t *def = json_object_get(f, "default");
		field->default_json = NULL;
		if (def != NULL) {
			char *text = tl_json_dumps(def, JSON_ENCODE_ANY | JSON_COMPACT);
			if (text == NULL)
				return tl_error_nomem(ctx->err, "parsing an Avro schema");
			{
				field->default_json = arena_strdup(ctx->arena, text);
				tl_free(text);
			}
		}
	}
	return 0;
}

static int parse_symbols(parse_ctx *ctx, json_t *obj, tl_avro_schema *node)
{
	json_t *symbols = json_object_get(obj, "symbols");
	if (!json_is_array(symbols) || json_array_size(symbols) == 0 || json_array_size(symbols) > INT32_MAX)
		return tl_error_set(ctx->err, TL_ERR_INVALID, "Avro schema: enum %s needs a non-empty \"symbols\" array",
		                    node->name);
	node->n_symbols = (uint32_t)json_array_size(symbols);
	node->symbols = tl_arena_alloc(ctx->arena, node->n_symbols * sizeof(char *));
	if (node->symbols == NULL) {
		node->n_symbols = 0;
		return tl_error_nomem(ctx->err, "parsing an Avro schema");
	}
	for (uint32_t i = 0; i < node->n_symbols; i++) {
		json_t *s = json_array_get(symbols, i);
		if (!json_is_string(s))
			return tl_error_set(ctx->err, TL_ERR_INVALID, "Avro schema: symbol %u of enum %s is not a string",
			                    i, node->name);
		node->symbols[i] = arena_strdup(ctx->arena, json_string_value(s));
	}
	return 0;
}

static tl_avro_schema *parse_union(parse_ctx *ctx, json_t *json, const char *ns, int depth)
{
	size_t n = json_array_size(json);
	if (n == 0 || n > 1000) {
		tl_error_set(ctx->err, TL_ERR_INVALID, "Avro schema: a union needs 1 to 1000 branches, not %zu", n);
		return NULL;
	}
	tl_avro_schema *node = new_node(ctx, TL_AVRO_UNION);
	if (node == NULL)
		return NULL;
	node->n_branches = (uint32_t)n;
	node->branches = tl_arena_alloc(ctx->arena, n * sizeof(tl_avro_schema *));
	if (node->branches == NULL) {
		tl_error_nomem(ctx->err, "parsing an Avro schema");
		return NULL;
	}
	for (size_t i = 0; i < n; i++) {
		tl_avro_schema *b = parse_node(ctx, json_array_get(json, i), ns, depth + 1);
		if (b == NULL)
			return NULL;
		if (b->type == TL_AVRO_UNION) {
			tl_error_set(ctx->err, TL_ERR_INVALID, "Avro schema: a union may not contain a union");
			return NULL;
		}
		node->branches[i] = b;
	}
	return node;
}

static tl_avro_schema *parse_object(parse_ctx *ctx, json_t *obj, const char *ns, int depth)
{
	json_t *type = json_object_get(obj, "type");
	if (json_is_object(type) || json_is_array(type))
		return parse_node(ctx, type, ns, depth + 1); /* {"type": {...}} wraps a schema */
	if (!json_is_string(type)) {
		tl_error_set(ctx->err, TL_ERR_INVALID, "Avro schema: object without a \"type\" string");
		return NULL;
	}
	const char *name = json_string_value(type);
	tl_avro_schema *node;
	tl_avro_type prim;
	if (primitive_type(name, &prim) == 0) {
		if ((node = new_node(ctx, prim)) == NULL)
			return NULL;
	} else if (strcmp(name, "record") == 0 || strcmp(name, "error") == 0) {
		if ((node = new_node(ctx, TL_AVRO_RECORD)) == NULL)
			return NULL;
		if (define_name(ctx, obj, node, &ns) != 0 || parse_fields(ctx, obj, node, ns, depth) != 0)
			return NULL;
	} else if (strcmp(name, "enum") == 0) {
		if ((node = new_node(ctx, TL_AVRO_ENUM)) == NULL)
			return NULL;
		if (define_name(ctx, obj, node, &ns) != 0 || parse_symbols(ctx, obj, node) != 0)
			return NULL;
	} else if (strcmp(name, "fixed") == 0) {
		if ((node = new_node(ctx, TL_AVRO_FIXED)) == NULL)
			return NULL;
		if (define_name(ctx, obj, node, &ns) != 0)
			return NULL;
		json_t *size = json_object_get(obj, "size");
		if (!json_is_integer(size) || json_integer_value(size) < 0 || json_integer_value(size) > INT32_MAX) {
			tl_error_set(ctx->err, TL_ERR_INVALID, "Avro schema: fixed %s needs a \"size\" from 0 to 2^31-1",
			             node->name);
			return NULL;
		}
		node->size = (int32_t)json_integer_value(size);
	} else if (strcmp(name, "array") == 0 || strcmp(name, "map") == 0) {
		bool is_array = name[0] == 'a';
		if ((node = new_node(ctx, is_array ? TL_AVRO_ARRAY : TL_AVRO_MAP)) == NULL)
			return NULL;
		json_t *items = json_object_get(obj, is_array ? "items" : "values");
		if (items == NULL) {
			tl_error_set(ctx->err, TL_ERR_INVALID, "Avro schema: %s without \"%s\"", name,
			             is_array ? "items" : "values");
			return NULL;
		}
		if (int_attr(ctx, obj, "element-id", &node->element_id, name) != 0 ||
		    int_attr(ctx, obj, "key-id", &node->key_id, name) != 0 ||
		    int_attr(ctx, obj, "value-id", &node->value_id, name) != 0)
			return NULL;
		node->items = parse_node(ctx, items, ns, depth + 1);
		if (node->items == NULL)
			return NULL;
	} else {
		node = lookup_name(ctx, name, ns);
		if (node == NULL) {
			tl_error_set(ctx->err, TL_ERR_INVALID, "Avro schema: unknown type \"%s\"", name);
			return NULL;
		}
		return node;
	}
	json_t *logical = json_object_get(obj, "logicalType");
	if (json_is_string(logical)) {
		node->logical_type = arena_strdup(ctx->arena, json_string_value(logical));
		if (int_attr(ctx, obj, "precision", &node->precision, name) != 0 ||
		    int_attr(ctx, obj, "scale", &node->scale, name) != 0)
			return NULL;
	}
	return node;
}

static tl_avro_schema *parse_node(parse_ctx *ctx, json_t *json, const char *ns, int depth)
{
	if (depth > TL_AVRO_MAX_DEPTH) {
		tl_error_set(ctx->err, TL_ERR_INVALID, "Avro schema: nested deeper than %d levels", TL_AVRO_MAX_DEPTH);
		return NULL;
	}
	if (json_is_string(json)) {
		tl_avro_type prim;
		if (primitive_type(json_string_value(json), &prim) == 0)
			return new_node(ctx, prim);
		tl_avro_schema *named = lookup_name(ctx, json_string_value(json), ns);
		if (named == NULL)
			tl_error_set(ctx->err, TL_ERR_INVALID, "Avro schema: unknown type \"%s\"", json_string_value(json));
		return named;
	}
	if (json_is_array(json))
		return parse_union(ctx, json, ns, depth);
	if (json_is_object(json))
		return parse_object(ctx, json, ns, depth);
	tl_error_set(ctx->err, TL_ERR_INVALID, "Avro schema: a type must be a string, array or object");
	return NULL;
}

tl_avro_schema *tl_avro_schema_parse(const char *json, size_t len, tl_error *err)
{
	json_error_t jerr;
	unsigned long failures = tl_mem_failures();
	json_t *root_json = tl_json_loadb(json, len, JSON_DECODE_ANY | JSON_REJECT_DUPLICATES, &jerr);
	if (root_json == NULL && tl_mem_failures() != failures) {
		tl_error_nomem(err, "parsing an Avro schema");
		return NULL;
	}
	if (root_json == NULL) {
		tl_error_set(err, TL_ERR_INVALID, "Avro schema: invalid JSON at line %d column %d: %s", jerr.line,
		             jerr.column, jerr.text);
		return NULL;
	}
	struct tl_avro_schema_doc *doc = tl_malloc(sizeof(*doc));
	if (doc == NULL) {
		json_decref(root_json);
		tl_error_nomem(err, "parsing an Avro schema");
		return NULL;
	}
	tl_arena_init(&doc->arena, 4096);
	parse_ctx ctx = {.arena = &doc->arena, .err = err};
	tl_avro_schema *root = parse_node(&ctx, root_json, "", 0);
	tl_free(ctx.names);
	json_decref(root_json);
	/* A schema that is only a primitive comes back as a fresh node, so this is never shared. */
	doc->json = root != NULL ? tl_malloc(len + 1) : NULL;
	if (root != NULL && (doc->json == NULL || tl_mem_failures() != failures)) {
		/* whatever the parser said after an allocation failed, the cause is memory */
		tl_error_clear(err);
		tl_error_nomem(err, "parsing an Avro schema");
		tl_free(doc->json);
		root = NULL;
	}
	if (root == NULL) {
		if (err != NULL && err->code != TL_ERR_NOMEM && tl_mem_failures() != failures) {
			tl_error_clear(err);
			tl_error_nomem(err, "parsing an Avro schema");
		}
		tl_arena_free(&doc->arena);
		tl_free(doc);
		return NULL;
	}
	memcpy(doc->json, json, len);
	doc->json[len] = '\0';
	root->doc_ = doc;
	return root;
}

void tl_avro_schema_free(tl_avro_schema *root)
{
	if (root == NULL || root->doc_ == NULL)
		return;
	struct tl_avro_schema_doc *doc = root->doc_;
	tl_free(doc->json);
	tl_arena_free(&doc->arena); /* root lives in this arena */
	tl_free(doc);
}

const char *tl_avro_schema_json(const tl_avro_schema *root)
{
	return root->doc_ ? root->doc_->json : NULL;
}

int tl_avro_schema_field_index(const tl_avro_schema *record, const char *name)
{
	if (record == NULL || record->type != TL_AVRO_RECORD)
		return -1;
	for (uint32_t i = 0; i < record->n_fields; i++)
		if (strcmp(record->fields[i].name, name) == 0)
			return (int)i;
	return -1;
}
