/*
 * writer_footer.c: the footer the writer ends a file with: FileMetaData
 * (schema, row groups, key-value metadata, created_by, column orders),
 * its length as a little-endian u32, and the closing "PAR1".
 *
 * Each column is described twice, as the LogicalType every current reader
 * understands and as the legacy ConvertedType older readers (Hive, old
 * Spark, old parquet-mr) still look for, following parquet-cpp: the legacy
 * type is written only where its meaning is exactly the logical type's.
 */
#include <string.h>

#include "parquet/metadata.h"
#include "parquet/writer_internal.h"

static const uint8_t parquet_magic[4] = {'P', 'A', 'R', '1'};

static int32_t converted_int_type(const tl_pq_column *col)
{
	int step = col->int_bit_width == 8 ? 0 : col->int_bit_width == 16 ? 1 : col->int_bit_width == 32 ? 2 : 3;
	return (col->int_signed ? PQ_CT_INT_8 : PQ_CT_UINT_8) + step;
}

void pq_schema_element_from_column(const tl_pq_column *col, pq_schema_element *se)
{
	memset(se, 0, sizeof(*se));
	se->has_type = true;
	se->type = col->physical;
	se->type_length = col->physical == TL_PQ_FIXED_LEN_BYTE_ARRAY ? col->type_length : 0;
	se->has_repetition = true;
	se->repetition = col->required ? PQ_REQUIRED : PQ_OPTIONAL;
	se->name.ptr = (const uint8_t *)col->name;
	se->name.len = (uint32_t)strlen(col->name);
	se->converted_type = PQ_CT_NONE;
	se->has_field_id = col->field_id >= 0;
	se->field_id = col->field_id;

	pq_logical_type *lt = &se->logical;
	switch (col->logical) {
	case TL_PQ_LOGICAL_NONE:
		break;
	case TL_PQ_LOGICAL_STRING:
		lt->kind = PQ_LT_STRING;
		se->converted_type = PQ_CT_UTF8;
		break;
	case TL_PQ_LOGICAL_JSON:
		lt->kind = PQ_LT_JSON;
		se->converted_type = PQ_CT_JSON;
		break;
	case TL_PQ_LOGICAL_ENUM:
		lt->kind = PQ_LT_ENUM;
		se->converted_type = PQ_CT_ENUM;
		break;
	case TL_PQ_LOGICAL_DATE:
		lt->kind = PQ_LT_DATE;
		se->converted_type = PQ_CT_DATE;
		break;
	case TL_PQ_LOGICAL_UUID:
		lt->kind = PQ_LT_UUID;    /* no legacy equivalent */
		break;
	case TL_PQ_LOGICAL_DECIMAL:
		lt->kind = PQ_LT_DECIMAL;
		lt->decimal_precision = col->precision;
		lt->decimal_scale = col->scale;
		se->converted_type = PQ_CT_DECIMAL;
		se->precision = col->precision;
		se->scale = col->scale;
		break;
	case TL_PQ_LOGICAL_TIMESTAMP:
	case TL_PQ_LOGICAL_TIME: {
		bool timestamp = col->logical == TL_PQ_LOGICAL_TIMESTAMP;
		lt->kind = timestamp ? PQ_LT_TIMESTAMP : PQ_LT_TIME;
		lt->unit = (int)col->unit;
		lt->utc_adjusted = col->utc_adjusted;
		/* The legacy types mean UTC-adjusted millis or micros; a local
		 * time or nanoseconds has only the LogicalType. */
		if (col->utc_adjusted && col->unit == TL_PQ_MILLIS)
			se->converted_type = timestamp ? PQ_CT_TIMESTAMP_MILLIS : PQ_CT_TIME_MILLIS;
		else if (col->utc_adjusted && col->unit == TL_PQ_MICROS)
			se->converted_type = timestamp ? PQ_CT_TIMESTAMP_MICROS : PQ_CT_TIME_MICROS;
		break;
	}
	case TL_PQ_LOGICAL_INT:
		lt->kind = PQ_LT_INTEGER;
		lt->int_bit_width = (int8_t)col->int_bit_width;
		lt->int_signed = col->int_signed;
		se->converted_type = converted_int_type(col);
		break;
	}
}

int pq_footer_encode(const tl_pq_schema *schema, int64_t num_rows, pq_row_group *row_groups, int32_t nrow_groups,
                      const tl_pq_kv *metadata, int nmetadata, const char *created_by, tl_arena *arena, tl_buf *out)
{
	int ncolumns = schema->ncolumns;
	pq_file_metadata md;
	memset(&md, 0, sizeof(md));
	md.version = 2;

	/* The root: a group named "schema", as parquet-cpp and parquet-mr name it. */
	md.nschema = ncolumns + 1;
	md.schema = tl_arena_alloc(arena, (size_t)md.nschema * sizeof(pq_schema_element));
	if (md.schema == NULL)
		return -1;
	memset(&md.schema[0], 0, sizeof(md.schema[0]));
	md.schema[0].name.ptr = (const uint8_t *)"schema";
	md.schema[0].name.len = 6;
	md.schema[0].num_children = ncolumns;
	md.schema[0].converted_type = PQ_CT_NONE;
	for (int i = 0; i < ncolumns; i++)
		pq_schema_element_from_column(&schema->columns[i], &md.schema[i + 1]);

	md.num_rows = num_rows;
	md.nrow_groups = nrow_groups;
	md.row_groups = row_groups;
	md.nkey_value = nmetadata;
	md.key_value = tl_arena_alloc(arena, (size_t)(nmetadata + 1) * sizeof(pq_key_value));
	if (md.key_value == NULL)
		return -1;
	for (int i = 0; i < nmetadata; i++) {
		pq_key_value *kv = &md.key_value[i];
		kv->key.ptr = (const uint8_t *)metadata[i].key;
		kv->key.len = (uint32_t)strlen(metadata[i].key);
		kv->has_value = metadata[i].value != NULL;
		kv->value.ptr = (const uint8_t *)metadata[i].value;
		kv->value.len = kv->has_value ? (uint32_t)strlen(metadata[i].value) : 0;
	}
	md.has_created_by = true;
	md.created_by.ptr = (const uint8_t *)created_by;
	md.created_by.len = (uint32_t)strlen(created_by);
	md.has_column_orders = true;     /* TYPE_ORDER for every column */

	size_t start = out->len;
	pq_file_metadata_encode(&md, out);
	pq_append_u32_le(out, (uint32_t)(out->len - start));
	tl_buf_append(out, parquet_magic, sizeof(parquet_magic));
	return tl_buf_failed(out) ? -1 : 0;
}
