#!/usr/bin/env bash
# deps.sh - installs what ringfeed needs on Debian 12 (idempotent; as root).
#   scripts/deps.sh          build + run dependencies
#   scripts/deps.sh --test   also the test servers and tools (nginx, s3rver, python3-torch...)
set -euo pipefail
pkgs=(build-essential cmake pkg-config liburing-dev libzstd-dev libcurl4-openssl-dev
      libexpat1-dev libjansson-dev zlib1g-dev libcmocka-dev zstd libsnappy-dev liblz4-dev
      libbrotli-dev libssl-dev)
if [ "${1:-}" = "--test" ]; then
	# libseccomp-dev: tests/seccomp_wrap.c (io_uring blocked as container profiles do)
	pkgs+=(libseccomp-dev curl openssl clang clang-format libclang-rt-14-dev python3 python3-numpy python3-pytest
	       python3-torch python3-pil python3-zstandard libxml2-utils python3-setuptools python3-wheel
	       python3-venv python3-pip librsvg2-bin)
	# TFRecord tests: TensorFlow's example.proto compiled by protoc, the
	# framing's CRC-32C from crcmod (tests/tfrecord_write.py)
	pkgs+=(protobuf-compiler python3-protobuf python3-crcmod)
	# By command, not package name: a nodejs from NodeSource ships its own npm
	# (Debian's npm package would conflict with it), and any nginx build with
	# the ssl module serves the tests (scripts/servers.sh).
	command -v nginx >/dev/null || pkgs+=(nginx)
	command -v npm >/dev/null || pkgs+=(nodejs npm)
fi
missing=()
for p in "${pkgs[@]}"; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
	SUDO=""
	[ "$(id -u)" = 0 ] || SUDO="sudo"
	echo "deps: installing ${missing[*]}" >&2
	$SUDO apt-get update -q >&2
	DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -q --no-install-recommends "${missing[@]}" >&2
fi
if [ "${1:-}" = "--test" ]; then
	# s3rver (npm) for the S3 tests, installed into a cache folder of ours.
	top=$(cd "$(dirname "$0")/.." && pwd)
	if [ ! -x "$top/.cache/npm/node_modules/.bin/s3rver" ]; then
		mkdir -p "$top/.cache/npm"
		(cd "$top/.cache/npm" && npm install --no-audit --no-fund --silent s3rver@3.7.1 >&2) ||
			{ echo "deps: npm install s3rver@3.7.1 failed (is the npm registry reachable?)" >&2; exit 1; }
	fi
	# Azurite, Microsoft's Azure Storage emulator (blob service only), for
	# tests/cli_azure.sh: it verifies Shared Key and SAS signatures.
	if [ ! -x "$top/.cache/npm/node_modules/.bin/azurite-blob" ]; then
		mkdir -p "$top/.cache/npm"
		(cd "$top/.cache/npm" && npm install --no-audit --no-fund --silent azurite@3.37.0 >&2) ||
			{ echo "deps: npm install azurite@3.37.0 failed" >&2; exit 1; }
	fi
	# The Parquet tests' reference writers and reader (tests/parquet_gen.mjs).
	if [ ! -d "$top/.cache/npm/node_modules/parquet-wasm" ] ||
		[ ! -d "$top/.cache/npm/node_modules/@duckdb/node-api" ]; then
		(cd "$top/.cache/npm" && npm install --no-audit --no-fund --silent \
			@duckdb/node-api@1.5.6-r.1 parquet-wasm@0.8.0 >&2) ||
			{ echo "deps: npm install @duckdb/node-api parquet-wasm failed" >&2; exit 1; }
	fi
fi
