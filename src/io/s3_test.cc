// Copyright 2026 The stoker Authors.
//
// S3 configuration (environment, profiles in temp files), URLs, and the
// signature libcurl computes with stoker's request settings, compared with
// AWS's published Signature V4 examples for S3 (GET Object with a Range,
// and ListObjects). The server side (listing, reading, refusal, resume) is
// tested against a real S3 server in python/tests/test_s3.py.
#include "io/s3.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <optional>
#include <thread>

#include <gtest/gtest.h>

#include "testing/test_images.h"

namespace stoker {
namespace {

// Sets environment variables for one test and restores them after.
class ScopedEnv {
 public:
  ScopedEnv() {
    for (const char* n : kNames) {
      const char* v = std::getenv(n);
      saved_.emplace_back(n, v == nullptr ? std::optional<std::string>() : std::string(v));
      ::unsetenv(n);
    }
  }
  ~ScopedEnv() {
    for (auto& [n, v] : saved_) {
      if (v) ::setenv(n, v->c_str(), 1);
      else ::unsetenv(n);
    }
  }
  void Set(const char* n, const std::string& v) { ::setenv(n, v.c_str(), 1); }

 private:
  static constexpr const char* kNames[] = {
      "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_REGION",
      "AWS_DEFAULT_REGION", "AWS_PROFILE", "AWS_SHARED_CREDENTIALS_FILE", "AWS_CONFIG_FILE",
      "AWS_ENDPOINT_URL", "AWS_ENDPOINT_URL_S3", "HOME"};
  std::vector<std::pair<const char*, std::optional<std::string>>> saved_;
};

void WriteText(const std::string& path, const std::string& text) { std::ofstream(path) << text; }

TEST(S3Test, ParsesUrls) {
  auto w = ParseS3Url("s3://bucket/a/b/train-000001.tar").value();
  EXPECT_EQ(w.bucket, "bucket");
  EXPECT_EQ(w.key, "a/b/train-000001.tar");
  EXPECT_EQ(ParseS3Url("s3://bucket").value().key, "");
  EXPECT_FALSE(ParseS3Url("s3:///key").ok());
  EXPECT_TRUE(IsRemoteUrl("s3://b/k"));
  EXPECT_FALSE(IsS3Url("https://b/k"));
}

TEST(S3Test, UriEncodingAndAddressing) {
  EXPECT_EQ(S3UriEncode("a b/c+d~e_f.g-h", true), "a%20b/c%2Bd~e_f.g-h");
  EXPECT_EQ(S3UriEncode("a/b=", false), "a%2Fb%3D");
  S3Config c;
  c.region = "eu-west-1";
  EXPECT_EQ(S3HttpUrl(c, {"bkt", "x/y z.tar"}), "https://bkt.s3.eu-west-1.amazonaws.com/x/y%20z.tar");
  EXPECT_EQ(S3HttpUrl(c, {"b.k.t", "k"}), "https://s3.eu-west-1.amazonaws.com/b.k.t/k");
  c.endpoint = "http://127.0.0.1:9000";
  EXPECT_EQ(S3HttpUrl(c, {"bkt", "k.tar"}), "http://127.0.0.1:9000/bkt/k.tar");  // path-style
}

TEST(S3Test, CredentialsFromTheEnvironmentFirst) {
  ScopedEnv env;
  testing::TempDir dir;
  env.Set("HOME", dir.path());
  env.Set("AWS_ACCESS_KEY_ID", "AKENV");
  env.Set("AWS_SECRET_ACCESS_KEY", "secret");
  env.Set("AWS_SESSION_TOKEN", "tok");
  env.Set("AWS_DEFAULT_REGION", "ap-south-1");
  env.Set("AWS_ENDPOINT_URL", "http://127.0.0.1:1234/");
  const S3Config c = ResolveS3Config("").value();
  EXPECT_EQ(c.access_key, "AKENV");
  EXPECT_EQ(c.secret_key, "secret");
  EXPECT_EQ(c.session_token, "tok");
  EXPECT_EQ(c.region, "ap-south-1");
  EXPECT_EQ(c.endpoint, "http://127.0.0.1:1234");
  EXPECT_NE(c.source.find("environment"), std::string::npos) << c.source;
  EXPECT_NE(c.source.find("AKENV"), std::string::npos) << c.source;
  EXPECT_EQ(c.source.find("secret"), std::string::npos) << c.source;  // never the secret
  EXPECT_EQ(ResolveS3Config("https://other:1").value().endpoint, "https://other:1");
  EXPECT_FALSE(ResolveS3Config("ftp://x").ok());

  const RemoteRequest r = S3Request(c, "s3://b/k");
  EXPECT_EQ(r.aws_sigv4, "aws:amz:ap-south-1:s3");
  EXPECT_EQ(r.user_pwd, "AKENV:secret");
  EXPECT_EQ(r.headers.size(), 2u);
  EXPECT_NE(r.denied_hint.find("environment"), std::string::npos);
}

TEST(S3Test, ProfilesFromTheSharedFiles) {
  ScopedEnv env;
  testing::TempDir dir;
  env.Set("HOME", dir.path() + "/nohome");
  const std::string creds = dir.path() + "/credentials", config = dir.path() + "/config";
  WriteText(creds,
            "# comment\n[default]\naws_access_key_id = AKDEF\naws_secret_access_key = sdef\n\n"
            "[train]\naws_access_key_id=AKTRAIN\naws_secret_access_key=strain\n"
            "aws_session_token = ttrain\n");
  WriteText(config,
            "[default]\nregion = us-west-2\n[profile train]\nregion = eu-central-1\n"
            "endpoint_url = http://127.0.0.1:9000\n[profile cfgonly]\n"
            "aws_access_key_id = AKCFG\naws_secret_access_key = scfg\n");
  env.Set("AWS_SHARED_CREDENTIALS_FILE", creds);
  env.Set("AWS_CONFIG_FILE", config);

  S3Config c = ResolveS3Config("").value();
  EXPECT_EQ(c.access_key, "AKDEF");
  EXPECT_EQ(c.region, "us-west-2");
  EXPECT_EQ(c.endpoint, "");
  EXPECT_NE(c.source.find("profile 'default' from " + creds), std::string::npos) << c.source;

  env.Set("AWS_PROFILE", "train");
  c = ResolveS3Config("").value();
  EXPECT_EQ(c.access_key, "AKTRAIN");
  EXPECT_EQ(c.secret_key, "strain");
  EXPECT_EQ(c.session_token, "ttrain");
  EXPECT_EQ(c.region, "eu-central-1");
  EXPECT_EQ(c.endpoint, "http://127.0.0.1:9000");
  env.Set("AWS_REGION", "sa-east-1");  // the environment wins over the profile
  EXPECT_EQ(ResolveS3Config("").value().region, "sa-east-1");

  env.Set("AWS_PROFILE", "cfgonly");
  c = ResolveS3Config("").value();
  EXPECT_EQ(c.access_key, "AKCFG");
  EXPECT_NE(c.source.find("profile 'cfgonly' from " + config), std::string::npos) << c.source;

  env.Set("AWS_PROFILE", "nope");
  auto missing = ResolveS3Config("");
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.status().message().find("AWS_PROFILE=nope"), std::string::npos);
  EXPECT_NE(missing.status().message().find(creds), std::string::npos);
}

TEST(S3Test, NoCredentialsMeansUnsignedRequests) {
  ScopedEnv env;
  testing::TempDir dir;
  env.Set("HOME", dir.path());
  const S3Config c = ResolveS3Config("").value();
  EXPECT_EQ(c.access_key, "");
  EXPECT_EQ(c.region, "us-east-1");
  EXPECT_NE(c.source.find("no credentials"), std::string::npos);
  const RemoteRequest r = S3Request(c, "s3://b/k");
  EXPECT_EQ(r.aws_sigv4, "");
  EXPECT_TRUE(r.headers.empty());
}

// Accepts one connection on loopback, records the request head and answers
// 200 with a short body. Bounded: gives up after 10 s.
class CaptureServer {
 public:
  CaptureServer() {
    fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ::bind(fd_, reinterpret_cast<sockaddr*>(&a), sizeof a);
    ::listen(fd_, 1);
    socklen_t len = sizeof a;
    ::getsockname(fd_, reinterpret_cast<sockaddr*>(&a), &len);
    port_ = ntohs(a.sin_port);
    thread_ = std::thread([this] { Serve(); });
  }
  ~CaptureServer() {
    thread_.join();
    ::close(fd_);
  }
  int port() const { return port_; }
  // The request head (valid after the client finished).
  std::string request() {
    thread_.join();
    thread_ = std::thread([] {});
    return request_;
  }

 private:
  void Serve() {
    pollfd p{fd_, POLLIN, 0};
    if (::poll(&p, 1, 10000) != 1) return;
    const int c = ::accept(fd_, nullptr, nullptr);
    if (c < 0) return;
    char buf[8192];
    while (request_.find("\r\n\r\n") == std::string::npos) {
      pollfd q{c, POLLIN, 0};
      if (::poll(&q, 1, 10000) != 1) break;
      const ssize_t n = ::read(c, buf, sizeof buf);
      if (n <= 0) break;
      request_.append(buf, static_cast<size_t>(n));
    }
    const char kResponse[] = "HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok";
    if (::write(c, kResponse, sizeof kResponse - 1) < 0) {}
    ::close(c);
  }
  int fd_ = -1;
  int port_ = 0;
  std::thread thread_;
  std::string request_;
};

// The Authorization header libcurl sends for `path` with stoker's S3
// settings, the example credentials and fixed date, and `extra` headers.
std::string SignedAuthorization(const std::string& path, std::vector<std::string> extra) {
  S3Config c;
  c.region = "us-east-1";
  c.access_key = "AKIAIOSFODNN7EXAMPLE";
  c.secret_key = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY";
  RemoteRequest r = S3Request(c, "s3://examplebucket" + path);
  r.headers.push_back("Host: examplebucket.s3.amazonaws.com");
  r.headers.push_back("x-amz-date: 20130524T000000Z");
  for (std::string& h : extra) r.headers.push_back(std::move(h));
  CaptureServer server;
  StreamOptions o;
  o.max_attempts = 1;
  auto s = OpenHttpStream("http://127.0.0.1:" + std::to_string(server.port()) + path, o, r);
  EXPECT_TRUE(s.ok()) << s.status().ToString();
  if (s.ok()) {
    uint8_t buf[16];
    size_t n = 0;
    do {
      EXPECT_TRUE(s.value()->Read(buf, sizeof buf, &n).ok());
    } while (n > 0);
  }
  const std::string req = server.request();
  const size_t a = req.find("Authorization: ");
  if (a == std::string::npos) return "(no Authorization header in: " + req + ")";
  return req.substr(a + 15, req.find("\r\n", a) - a - 15);
}

// AWS's examples, "Signature Calculations for the Authorization Header:
// Transferring Payload in a Single Chunk (AWS Signature Version 4)" in the
// Amazon S3 API reference.
TEST(S3Test, SignatureMatchesAwsExampleGetObject) {
  if (!BuiltWithCurl()) GTEST_SKIP() << "stoker was built without libcurl (STOKER_WITH_CURL=OFF)";
  EXPECT_EQ(SignedAuthorization("/test.txt", {"Range: bytes=0-9"}),
            "AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/20130524/us-east-1/s3/aws4_request, "
            "SignedHeaders=host;range;x-amz-content-sha256;x-amz-date, "
            "Signature=f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41");
}

TEST(S3Test, SignatureMatchesAwsExampleListObjects) {
  if (!BuiltWithCurl()) GTEST_SKIP() << "stoker was built without libcurl (STOKER_WITH_CURL=OFF)";
  EXPECT_EQ(SignedAuthorization("/?max-keys=2&prefix=J", {}),
            "AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/20130524/us-east-1/s3/aws4_request, "
            "SignedHeaders=host;x-amz-content-sha256;x-amz-date, "
            "Signature=34b48302e7b5fa45bde8084f4b7868a86f0a534bc59db6670ed5711ef69dc6f7");
}

TEST(S3Test, PrefixIsNotAnObject) {
  ScopedEnv env;
  auto s = OpenS3Stream("s3://bucket/dir/", StreamOptions());
  EXPECT_EQ(s.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.status().message().find("s3://bucket/dir/"), std::string::npos);
}

}  // namespace
}  // namespace stoker
