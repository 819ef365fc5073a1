// Copyright 2026 The stoker Authors.
//
// Records from tar shards (SampleSpec::fields, include/stoker/sources.h): a
// sample's members, read one after another into one byte buffer, become one
// FieldValue per field of the shard schema (ShardSchema). Both shard modes
// use it: the stream reader on the bytes a feed read, the indexed source on
// the members it preads.
//
// By kind: an image field's bytes are the encoded image (the primary image
// also goes to SampleData::bytes); text, json and bytes fields point at the
// member's bytes (the RecordProcessor checks UTF-8 and JSON); an array field
// is a .npy member (C order, little-endian, any dtype ParseNpyHeader and
// NpyElemType accept), pointing past its header; a label field is the
// integer text of its member (the primary one also goes to SampleData::label).
// A raw member (a bytes extension declared with a dtype and shape,
// ShardField) is an array field of raw elements: its size checked against the
// declaration, pointing at the member's bytes (little-endian), or at a
// byte-swapped copy in SampleScratch::field_bytes (big-endian).
//
// Thread-safety: pure functions. Errors: DataLoss naming the field and its
// member (the caller adds the sample's name).
#ifndef STOKER_SOURCE_SHARD_RECORDS_H_
#define STOKER_SOURCE_SHARD_RECORDS_H_

#include <cstdint>
#include <string>

#include "stoker/record.h"
#include "stoker/source.h"
#include "stoker/sources.h"

namespace stoker {

// ASCII letters lowered, other bytes kept (member extensions).
std::string AsciiLower(std::string s);

// How each field's member is read, besides its kind: raw elements or not
// (ShardField: a bytes member declared with a dtype and shape), and their
// byte order. One per field, in order.
struct ShardMemberFormat {
  bool raw = false;
  bool big_endian = false;
};
std::vector<ShardMemberFormat> ShardMemberFormats(const std::vector<ShardField>& fields);

// Fills scratch->fields (one value per schema field) from the members in
// `bytes`: field f's member is [bytes + starts[f], + sizes[f]), read as
// `formats[f]` says (null or empty: no raw member), named
// scratch->field_members[f] when the caller has set one name per field (each
// value's FieldValue::member, and in its errors). Sets out's primary image
// bytes, label and fields; leaves out->id to the caller.
// `allow_negative_labels` as in SampleSpec.
Status FillShardRecord(const Schema& schema, const uint8_t* bytes, const size_t* starts,
                       const int64_t* sizes, bool allow_negative_labels,
                       SampleScratch* scratch, SampleData* out,
                       const std::vector<ShardMemberFormat>* formats = nullptr);

}  // namespace stoker

#endif  // STOKER_SOURCE_SHARD_RECORDS_H_
