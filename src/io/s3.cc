// Copyright 2026 The stoker Authors.
#include "io/s3.h"

#include <fnmatch.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <map>

namespace stoker {
namespace {

// SHA-256 of the empty payload: every request here is a GET without a body.
constexpr char kEmptyPayloadSha256[] =
    "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";

std::string Env(const char* name) {
  const char* v = std::getenv(name);
  return v == nullptr ? std::string() : std::string(v);
}

std::string Trim(const std::string& s) {
  const size_t a = s.find_first_not_of(" \t\r\n");
  if (a == std::string::npos) return "";
  const size_t b = s.find_last_not_of(" \t\r\n");
  return s.substr(a, b - a + 1);
}

std::string HomeFile(const char* env, const char* relative) {
  std::string p = Env(env);
  if (!p.empty()) return p;
  const std::string home = Env("HOME");
  return home.empty() ? std::string() : home + "/" + relative;
}

using IniSection = std::map<std::string, std::string>;

// The sections of an INI file (the AWS shared files); false when it cannot be read.
bool ReadIni(const std::string& path, std::map<std::string, IniSection>* out) {
  if (path.empty()) return false;
  std::ifstream in(path);
  if (!in) return false;
  std::string line, section;
  while (std::getline(in, line)) {
    line = Trim(line);
    if (line.empty() || line[0] == '#' || line[0] == ';') continue;
    if (line.front() == '[' && line.back() == ']') {
      section = Trim(line.substr(1, line.size() - 2));
      (*out)[section];
      continue;
    }
    const size_t eq = line.find('=');
    if (eq == std::string::npos || section.empty()) continue;
    (*out)[section][Trim(line.substr(0, eq))] = Trim(line.substr(eq + 1));
  }
  return true;
}

std::string Get(const IniSection* s, const char* key) {
  if (s == nullptr) return "";
  auto it = s->find(key);
  return it == s->end() ? std::string() : it->second;
}

std::string XmlUnescape(const std::string& s) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] != '&') {
      out += s[i];
      continue;
    }
    const size_t semi = s.find(';', i);
    if (semi == std::string::npos) {
      out += s[i];
      continue;
    }
    const std::string ent = s.substr(i + 1, semi - i - 1);
    if (ent == "amp") out += '&';
    else if (ent == "lt") out += '<';
    else if (ent == "gt") out += '>';
    else if (ent == "quot") out += '"';
    else if (ent == "apos") out += '\'';
    else if (ent.size() > 1 && ent[0] == '#') {
      const long c = ent[1] == 'x' ? std::strtol(ent.c_str() + 2, nullptr, 16)
                                   : std::strtol(ent.c_str() + 1, nullptr, 10);
      // UTF-8 encode.
      if (c < 0x80) out += static_cast<char>(c);
      else if (c < 0x800) {
        out += static_cast<char>(0xC0 | (c >> 6));
        out += static_cast<char>(0x80 | (c & 0x3F));
      } else if (c < 0x10000) {
        out += static_cast<char>(0xE0 | (c >> 12));
        out += static_cast<char>(0x80 | ((c >> 6) & 0x3F));
        out += static_cast<char>(0x80 | (c & 0x3F));
      } else {
        out += static_cast<char>(0xF0 | (c >> 18));
        out += static_cast<char>(0x80 | ((c >> 12) & 0x3F));
        out += static_cast<char>(0x80 | ((c >> 6) & 0x3F));
        out += static_cast<char>(0x80 | (c & 0x3F));
      }
    } else {
      out += s.substr(i, semi - i + 1);
    }
    i = semi;
  }
  return out;
}

// The texts of every <tag>...</tag> in `xml`.
std::vector<std::string> XmlAll(const std::string& xml, const std::string& tag) {
  std::vector<std::string> out;
  const std::string open = "<" + tag + ">", close = "</" + tag + ">";
  size_t pos = 0;
  for (;;) {
    const size_t a = xml.find(open, pos);
    if (a == std::string::npos) break;
    const size_t b = xml.find(close, a);
    if (b == std::string::npos) break;
    out.push_back(XmlUnescape(xml.substr(a + open.size(), b - a - open.size())));
    pos = b + close.size();
  }
  return out;
}

StatusOr<std::string> ReadAll(ByteStream* s) {
  std::string out;
  uint8_t buf[65536];
  for (;;) {
    size_t got = 0;
    STOKER_RETURN_IF_ERROR(s->Read(buf, sizeof buf, &got));
    if (got == 0) return out;
    out.append(reinterpret_cast<const char*>(buf), got);
  }
}

}  // namespace

bool IsS3Url(const std::string& url) { return url.rfind("s3://", 0) == 0; }

StatusOr<S3Location> ParseS3Url(const std::string& url) {
  if (!IsS3Url(url)) return InvalidArgumentError("'" + url + "' is not an s3:// URL");
  const std::string rest = url.substr(5);
  const size_t slash = rest.find('/');
  S3Location where;
  where.bucket = rest.substr(0, slash);
  if (slash != std::string::npos) where.key = rest.substr(slash + 1);
  if (where.bucket.empty()) return InvalidArgumentError("'" + url + "': no bucket name");
  return where;
}

StatusOr<S3Config> ResolveS3Config(const std::string& endpoint) {
  S3Config c;
  const std::string profile_env = Env("AWS_PROFILE");
  const std::string profile = profile_env.empty() ? "default" : profile_env;
  const std::string cred_path = HomeFile("AWS_SHARED_CREDENTIALS_FILE", ".aws/credentials");
  const std::string config_path = HomeFile("AWS_CONFIG_FILE", ".aws/config");
  std::map<std::string, IniSection> creds, config;
  ReadIni(cred_path, &creds);
  ReadIni(config_path, &config);
  const IniSection* cred_section = nullptr;
  if (auto it = creds.find(profile); it != creds.end()) cred_section = &it->second;
  const IniSection* config_section = nullptr;
  const std::string config_name = profile == "default" ? "default" : "profile " + profile;
  if (auto it = config.find(config_name); it != config.end()) config_section = &it->second;

  if (!Env("AWS_ACCESS_KEY_ID").empty() && !Env("AWS_SECRET_ACCESS_KEY").empty()) {
    c.access_key = Env("AWS_ACCESS_KEY_ID");
    c.secret_key = Env("AWS_SECRET_ACCESS_KEY");
    c.session_token = Env("AWS_SESSION_TOKEN");
    c.source = "credentials from the environment (AWS_ACCESS_KEY_ID=" + c.access_key +
               (c.session_token.empty() ? "" : ", AWS_SESSION_TOKEN") + ")";
  } else {
    if (!profile_env.empty() && cred_section == nullptr && config_section == nullptr) {
      return InvalidArgumentError("AWS_PROFILE=" + profile + ": no [" + profile + "] in " +
                                  cred_path + " and no [" + config_name + "] in " + config_path);
    }
    for (const auto& [section, path] : {std::make_pair(cred_section, cred_path),
                                        std::make_pair(config_section, config_path)}) {
      if (Get(section, "aws_access_key_id").empty()) continue;
      c.access_key = Get(section, "aws_access_key_id");
      c.secret_key = Get(section, "aws_secret_access_key");
      c.session_token = Get(section, "aws_session_token");
      c.source = "credentials of profile '" + profile + "' from " + path +
                 " (aws_access_key_id=" + c.access_key + ")";
      break;
    }
    if (c.access_key.empty()) {
      c.source = "no credentials (unsigned requests; set AWS_ACCESS_KEY_ID and "
                 "AWS_SECRET_ACCESS_KEY, or a profile in " + cred_path + ")";
    }
  }
  c.region = Env("AWS_REGION");
  if (c.region.empty()) c.region = Env("AWS_DEFAULT_REGION");
  if (c.region.empty()) c.region = Get(config_section, "region");
  if (c.region.empty()) c.region = "us-east-1";
  c.endpoint = endpoint;
  if (c.endpoint.empty()) c.endpoint = Env("AWS_ENDPOINT_URL_S3");
  if (c.endpoint.empty()) c.endpoint = Env("AWS_ENDPOINT_URL");
  if (c.endpoint.empty()) c.endpoint = Get(config_section, "endpoint_url");
  while (!c.endpoint.empty() && c.endpoint.back() == '/') c.endpoint.pop_back();
  if (!c.endpoint.empty() && c.endpoint.rfind("http://", 0) != 0 &&
      c.endpoint.rfind("https://", 0) != 0) {
    return InvalidArgumentError("S3 endpoint '" + c.endpoint + "' is not an http(s):// URL");
  }
  return c;
}

std::string S3UriEncode(const std::string& s, bool keep_slash) {
  static const char kHex[] = "0123456789ABCDEF";
  std::string out;
  for (unsigned char ch : s) {
    if ((ch >= 'A' && ch <= 'Z') || (ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9') ||
        ch == '-' || ch == '_' || ch == '.' || ch == '~' || (keep_slash && ch == '/')) {
      out += static_cast<char>(ch);
    } else {
      out += '%';
      out += kHex[ch >> 4];
      out += kHex[ch & 15];
    }
  }
  return out;
}

std::string S3HttpUrl(const S3Config& c, const S3Location& where) {
  const std::string path = "/" + S3UriEncode(where.key, /*keep_slash=*/true);
  if (!c.endpoint.empty()) return c.endpoint + "/" + where.bucket + path;
  if (where.bucket.find('.') != std::string::npos) {
    return "https://s3." + c.region + ".amazonaws.com/" + where.bucket + path;
  }
  return "https://" + where.bucket + ".s3." + c.region + ".amazonaws.com" + path;
}

RemoteRequest S3Request(const S3Config& c, const std::string& name) {
  RemoteRequest r;
  r.name = name;
  r.denied_hint = c.source + ", region " + c.region + ", endpoint " +
                  (c.endpoint.empty() ? std::string("AWS") : c.endpoint);
  if (c.access_key.empty()) return r;
  r.aws_sigv4 = "aws:amz:" + c.region + ":s3";
  r.user_pwd = c.access_key + ":" + c.secret_key;
  // libcurl 7.88 signs the empty payload's hash but does not send it; S3 wants the header.
  r.headers.push_back(std::string("x-amz-content-sha256: ") + kEmptyPayloadSha256);
  if (!c.session_token.empty()) r.headers.push_back("x-amz-security-token: " + c.session_token);
  return r;
}

StatusOr<std::unique_ptr<ByteStream>> OpenS3Stream(const std::string& url,
                                                   const StreamOptions& options) {
  STOKER_ASSIGN_OR_RETURN(S3Location where, ParseS3Url(url));
  if (where.key.empty() || where.key.back() == '/') {
    return InvalidArgumentError(url + ": names a prefix, not an object");
  }
  STOKER_ASSIGN_OR_RETURN(S3Config config, ResolveS3Config(options.s3_endpoint));
  return OpenHttpStream(S3HttpUrl(config, where), options, S3Request(config, url));
}

StatusOr<RemoteInfo> ProbeS3(const std::string& url, const StreamOptions& options) {
  STOKER_ASSIGN_OR_RETURN(S3Location where, ParseS3Url(url));
  if (where.key.empty() || where.key.back() == '/') {
    return InvalidArgumentError(url + ": names a prefix, not an object");
  }
  STOKER_ASSIGN_OR_RETURN(S3Config config, ResolveS3Config(options.s3_endpoint));
  return ProbeHttp(S3HttpUrl(config, where), options, S3Request(config, url));
}

StatusOr<std::vector<std::string>> ListS3Keys(const std::string& bucket,
                                              const std::string& prefix,
                                              const StreamOptions& options) {
  STOKER_ASSIGN_OR_RETURN(S3Config config, ResolveS3Config(options.s3_endpoint));
  const std::string name = "s3://" + bucket + "/" + prefix + " (listing)";
  const std::string base = S3HttpUrl(config, S3Location{bucket, ""});
  std::vector<std::string> keys;
  std::string token;
  for (int page = 0;; ++page) {
    // Parameters in sorted order, encoded as the signature canonicalises them.
    std::string query;
    if (!token.empty()) query += "continuation-token=" + S3UriEncode(token, false) + "&";
    query += "list-type=2&prefix=" + S3UriEncode(prefix, false);
    StreamOptions o = options;
    o.cache_dir.clear();
    STOKER_ASSIGN_OR_RETURN(std::unique_ptr<ByteStream> s,
                            OpenHttpStream(base + "?" + query, o, S3Request(config, name)));
    STOKER_ASSIGN_OR_RETURN(std::string xml, ReadAll(s.get()));
    if (xml.find("<ListBucketResult") == std::string::npos) {
      return DataLossError(name + ": page " + std::to_string(page) +
                           " is not a ListObjectsV2 result");
    }
    for (std::string& k : XmlAll(xml, "Key")) keys.push_back(std::move(k));
    const std::vector<std::string> truncated = XmlAll(xml, "IsTruncated");
    if (truncated.empty() || truncated[0] != "true") break;
    const std::vector<std::string> next = XmlAll(xml, "NextContinuationToken");
    if (next.empty() || next[0].empty() || next[0] == token) {
      return DataLossError(name + ": page " + std::to_string(page) +
                           " is truncated without a new continuation token");
    }
    token = next[0];
  }
  return keys;
}

StatusOr<std::vector<std::string>> ExpandS3Pattern(const std::string& pattern,
                                                   const StreamOptions& options) {
  STOKER_ASSIGN_OR_RETURN(S3Location where, ParseS3Url(pattern));
  const size_t wild = where.key.find_first_of("*?[");
  const bool whole_prefix = where.key.empty() || where.key.back() == '/';
  if (wild == std::string::npos && !whole_prefix) return std::vector<std::string>{pattern};
  const std::string prefix = where.key.substr(0, std::min(wild, where.key.size()));
  STOKER_ASSIGN_OR_RETURN(std::vector<std::string> keys,
                          ListS3Keys(where.bucket, prefix, options));
  std::vector<std::string> out;
  for (const std::string& k : keys) {
    if (k.empty() || k.back() == '/') continue;  // "folder" markers
    if (wild != std::string::npos && ::fnmatch(where.key.c_str(), k.c_str(), FNM_PATHNAME) != 0) {
      continue;
    }
    out.push_back("s3://" + where.bucket + "/" + k);
  }
  if (out.empty()) {
    return NotFoundError("shard pattern '" + pattern + "': no object in bucket '" + where.bucket +
                         "' matches (listed " + std::to_string(keys.size()) +
                         " keys under prefix '" + prefix + "')");
  }
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace stoker
