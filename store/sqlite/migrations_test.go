package sqlite

import (
	"crypto/sha256"
	"encoding/hex"
	"path"
	"slices"
	"testing"
)

// releasedMigrations pins the SHA-256 of every migration that has shipped.
// Released migrations must never change: a database that applied one will
// not apply it again, so an edit silently splits old and new databases.
// Change the schema with a new migration file, and add its checksum here.
var releasedMigrations = map[string]string{
	"0001_base.sql":                     "c3b2aab3b01b2796ec61e7f715b957cadd57f8126bb73597ad148c4257c0bb95",
	"0002_runs.sql":                     "6767e7eb76e9ad43898329ffd9a862c556a55bf23b00a0958fbf0913d0b17258",
	"0003_automations.sql":              "84ace7fc5d52df7106b41b368c246bbf7444b60b8e00650096bb5735cfb1b407",
	"0004_sessions.sql":                 "95c9adc930ff254985606c3c2c29dc1dd67f303dde8ce49f87a978a26cd4ef82",
	"0005_session_archive_messages.sql": "a3e8f39168cbbde6a32281f09d6b320cbd0e33fbd7c00b093446306dc324a704",
	"0006_retention.sql":                "188f8950e8d2db91ad13139d456bbc8b14ffbd4318e1a764554749122dc816b9",
	"0008_leases.sql":                   "95cbf2333f9ce2c3c8c5cbc6b3dfd1a0c96202d166b8a3447d455753d96a02dc",
	"0014_journals.sql":                 "0ebc3be482e488bfae6cdd5c9754d89a2500fe00729e72f7b4cbe6210fd862ea",
	"0009_principals.sql":               "b78a56e8e89c0bdd1bef2596c6b01f75251d794e236651a5f59adc1e40211ec7",
	"0010_outbox.sql":                   "d57ec7de252b7a2ef95421e713c948c867722cedc3c2af7adb4b58aabe678a6e",
	"0012_sliced_compaction.sql":        "6aaf5efdc553c22ad5afbefbea321d62e8d8e6a720efdccc272d66fb180b58c5",
	"0013_peers.sql":                    "f6054bd97bf095be7d62641e1c9a2813ceb79a50e7c70b73104c9bddce11a01a",
}

func TestMigrationsAreAppendOnly(t *testing.T) {
	t.Parallel()
	names := migrationNames()
	for _, name := range names {
		body, err := migrationFiles.ReadFile(path.Join("migrations", name))
		if err != nil {
			t.Fatal(err)
		}
		sum := sha256.Sum256(body)
		want, released := releasedMigrations[name]
		switch {
		case !released:
			t.Errorf("migration %s has no pinned checksum: add %q to releasedMigrations when it ships", name, hex.EncodeToString(sum[:]))
		case hex.EncodeToString(sum[:]) != want:
			t.Errorf("released migration %s changed (sha256 %x, pinned %s): restore it and add a new migration instead", name, sum, want)
		}
	}
	for name := range releasedMigrations {
		if !slices.Contains(names, name) {
			t.Errorf("released migration %s is gone: restore it", name)
		}
	}
}
