package engine

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"time"
)

// TrustFileName is the file in the configuration directory that records
// which project policies a person has trusted. It lives there because
// trusting a project changes what a policy means, and because permwrap
// protects the configuration directory from every tree it supervises: a
// project cannot trust itself.
const TrustFileName = "trusted-projects.json"

// TrustRecord is one trusted project policy: its path and the SHA-256 of
// the content that was trusted. Any change to the file makes it
// untrusted again until a person trusts the new content.
type TrustRecord struct {
	Policy    string    `json:"policy"`
	SHA256    string    `json:"sha256"`
	TrustedAt time.Time `json:"trustedAt"`
}

// TrustStore is the content of the trust file.
type TrustStore struct {
	Version  int           `json:"version"`
	Projects []TrustRecord `json:"projects"`
}

const trustVersion = 1

// ContentHash is the hash trust records key on.
func ContentHash(data []byte) string {
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:])
}

// ReadTrust reads the trust file of a configuration directory; a missing
// file is an empty store. A file that is not a trust store is an error:
// permwrap does not guess which projects a person trusted.
func ReadTrust(configDir string) (TrustStore, error) {
	name := filepath.Join(configDir, TrustFileName)
	data, err := os.ReadFile(name)
	if errors.Is(err, fs.ErrNotExist) {
		return TrustStore{Version: trustVersion}, nil
	}
	if err != nil {
		return TrustStore{}, &ConfigError{Pos: Position{File: name}, Msg: unwrapPathError(err).Error()}
	}
	var t TrustStore
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&t); err != nil {
		return TrustStore{}, &ConfigError{Pos: Position{File: name}, Msg: "not a trust record: " + err.Error() + " (remove it and trust the projects again)"}
	}
	if t.Version != trustVersion {
		return TrustStore{}, &ConfigError{Pos: Position{File: name}, Msg: fmt.Sprintf("trust record version %d is not %d", t.Version, trustVersion)}
	}
	return t, nil
}

// Check reports whether the project policy at path is trusted with this
// content, and if not, why, in words for a warning.
func (t TrustStore) Check(path string, data []byte) (bool, string) {
	path = filepath.Clean(path)
	for _, r := range t.Projects {
		if r.Policy != path {
			continue
		}
		if r.SHA256 == ContentHash(data) {
			return true, ""
		}
		return false, "changed since it was trusted on " + r.TrustedAt.Format("2006-01-02")
	}
	return false, "not trusted"
}

// Trust records path as trusted with this content, replacing any earlier
// record of it.
func (t *TrustStore) Trust(path string, data []byte, now time.Time) {
	t.Untrust(path)
	t.Projects = append(t.Projects, TrustRecord{Policy: filepath.Clean(path), SHA256: ContentHash(data), TrustedAt: now.UTC().Truncate(time.Second)})
	sort.Slice(t.Projects, func(i, j int) bool { return t.Projects[i].Policy < t.Projects[j].Policy })
}

// Untrust removes the record of path and reports whether there was one.
func (t *TrustStore) Untrust(path string) bool {
	path = filepath.Clean(path)
	out := t.Projects[:0]
	found := false
	for _, r := range t.Projects {
		if r.Policy == path {
			found = true
			continue
		}
		out = append(out, r)
	}
	t.Projects = out
	return found
}

// WriteTrust replaces the trust file atomically (a reader sees the old or
// the new store, never half of one).
func WriteTrust(configDir string, t TrustStore) error {
	t.Version = trustVersion
	if t.Projects == nil {
		t.Projects = []TrustRecord{}
	}
	data, err := json.MarshalIndent(t, "", "  ")
	if err != nil {
		return err
	}
	data = append(data, '\n')
	return WriteFileAtomic(filepath.Join(configDir, TrustFileName), data, 0o600)
}

// WriteFileAtomic replaces name with data, creating its directory (0700)
// if needed: a reader — a permwrap starting now — sees the old file or
// the new one, never half of one.
func WriteFileAtomic(name string, data []byte, mode fs.FileMode) error {
	dir := filepath.Dir(name)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(name)+".*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Chmod(mode); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), name)
}
