#!/usr/bin/env bash
# Fails when gomobile cannot bind package mobile: gobind exits 0 even when it
# skips a function, method or field whose types it cannot carry, and only
# writes a "skipped" comment into its output, so this script looks for one.
set -euo pipefail
cd "$(dirname "$0")/.."
out="$(mktemp -d)"
trap 'rm -rf "$out"' EXIT
if ! go tool gobind -lang=go,java -outdir "$out" ./mobile >"$out.log" 2>&1; then
	cat "$out.log"; rm -f "$out.log"
	echo "mobile-check: gobind failed" >&2
	exit 1
fi
rm -f "$out.log"
if grep -rn "skipped" "$out"; then
	echo "mobile-check: gobind skipped the declarations above; change their types so gomobile can bind them" >&2
	exit 1
fi
classes="$(find "$out/java" -name '*.java' | wc -l)"
echo "mobile-check: gobind bound package mobile with no skipped declarations ($classes Java files)"
# Where a JDK is installed, the Java side must also compile. Only
# android.content.Context (taken by go.Seq) is missing off Android; a
# one-line stand-in is enough for javac.
if command -v javac >/dev/null; then
	mkdir -p "$out/stub/android/content" "$out/classes"
	echo 'package android.content; public class Context {}' >"$out/stub/android/content/Context.java"
	javac -d "$out/classes" $(find "$out/java" "$out/stub" -name '*.java')
	echo "mobile-check: the generated Java compiles"
fi
