package main

import (
	"os"
	"testing"
)

// TestServeMaxMetadataFlag: --max-metadata-bytes comes from the flag or
// from TOOLGATE_MAX_METADATA_BYTES (the flag wins), 4096 by default, and a
// limit below the size of {} is refused.
func TestServeMaxMetadataFlag(t *testing.T) {
	t.Setenv("TOOLGATE_MAX_METADATA_BYTES", "")
	os.Unsetenv("TOOLGATE_MAX_METADATA_BYTES")
	cfg, _, err := serveFlags(nil)
	if err != nil || cfg.MaxMetadataBytes != 4096 {
		t.Errorf("default: %d, %v; want 4096", cfg.MaxMetadataBytes, err)
	}
	t.Setenv("TOOLGATE_MAX_METADATA_BYTES", "512")
	if cfg, _, err = serveFlags(nil); err != nil || cfg.MaxMetadataBytes != 512 {
		t.Errorf("from the environment: %d, %v; want 512", cfg.MaxMetadataBytes, err)
	}
	if cfg, _, err = serveFlags([]string{"--max-metadata-bytes", "8192"}); err != nil || cfg.MaxMetadataBytes != 8192 {
		t.Errorf("a flag over its variable: %d, %v; want 8192", cfg.MaxMetadataBytes, err)
	}
	if _, _, err = serveFlags([]string{"--max-metadata-bytes", "1"}); err == nil {
		t.Error("a limit of 1 byte was accepted")
	}
}
