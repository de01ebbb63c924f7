// Package crinode holds what a CRI node of the e2e, Kubernetes and
// benchmark tests needs that neither a registry nor the sandbox gives:
// images written as a docker-archive, the format `ctr images import` reads
// (no registry is reachable), the mounts of the cgroup hierarchies that the
// sandbox's fresh sysfs hides (runc needs them), the runtimes
// scripts/install-runtimes.sh built, and containerd's configurations.
package crinode

import (
	"archive/tar"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
)

// Image is one image of an archive: its name, its root filesystem as a
// single layer, and the command it runs by default.
type Image struct {
	Ref    string
	Rootfs string
	Cmd    []string
}

// Archive renders a docker-archive tar (manifest.json, one config and one
// layer per image).
func Archive(images []Image) ([]byte, error) {
	var out bytes.Buffer
	tw := tar.NewWriter(&out)
	var manifest []map[string]any
	for i, img := range images {
		layer, err := tarDir(img.Rootfs)
		if err != nil {
			return nil, fmt.Errorf("image %s: %w", img.Ref, err)
		}
		config, err := imageConfig(layer, img.Cmd)
		if err != nil {
			return nil, fmt.Errorf("image %s: %w", img.Ref, err)
		}
		layerName := fmt.Sprintf("layer%d.tar", i)
		configName := fmt.Sprintf("config%d.json", i)
		for name, data := range map[string][]byte{layerName: layer, configName: config} {
			if err := tarFile(tw, name, data); err != nil {
				return nil, fmt.Errorf("image %s: %w", img.Ref, err)
			}
		}
		manifest = append(manifest, map[string]any{
			"Config": configName, "RepoTags": []string{img.Ref}, "Layers": []string{layerName},
		})
	}
	data, err := json.Marshal(manifest)
	if err != nil {
		return nil, err
	}
	if err := tarFile(tw, "manifest.json", data); err != nil {
		return nil, err
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return out.Bytes(), nil
}

// imageConfig renders an image configuration for one uncompressed layer:
// its diff ID is the layer's SHA-256.
func imageConfig(layer []byte, cmd []string) ([]byte, error) {
	sum := sha256.Sum256(layer)
	return json.Marshal(map[string]any{
		"architecture": runtime.GOARCH,
		"os":           "linux",
		"config": map[string]any{
			"Cmd": cmd,
			"Env": []string{"PATH=/bin"},
		},
		"rootfs": map[string]any{
			"type":     "layers",
			"diff_ids": []string{"sha256:" + hex.EncodeToString(sum[:])},
		},
	})
}

// tarFile adds one regular file to an archive.
func tarFile(tw *tar.Writer, name string, data []byte) error {
	hdr := &tar.Header{Name: name, Mode: 0o644, Size: int64(len(data)), Typeflag: tar.TypeReg}
	if err := tw.WriteHeader(hdr); err != nil {
		return fmt.Errorf("tar header %s: %w", name, err)
	}
	if _, err := tw.Write(data); err != nil {
		return fmt.Errorf("tar %s: %w", name, err)
	}
	return nil
}

// tarDir packs a directory tree (directories, files and symlinks, owned by
// root) into an uncompressed tar. Equivalent to: tar -C $dir -cf - .
func tarDir(dir string) ([]byte, error) {
	var out bytes.Buffer
	tw := tar.NewWriter(&out)
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil || rel == "." {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		link := ""
		if info.Mode()&fs.ModeSymlink != 0 {
			if link, err = os.Readlink(p); err != nil {
				return err
			}
		}
		hdr, err := tar.FileInfoHeader(info, link)
		if err != nil {
			return err
		}
		hdr.Name, hdr.Uid, hdr.Gid, hdr.Uname, hdr.Gname = rel, 0, 0, "root", "root"
		if d.IsDir() {
			hdr.Name += "/"
		}
		if err := tw.WriteHeader(hdr); err != nil {
			return err
		}
		if !info.Mode().IsRegular() {
			return nil
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		_, err = tw.Write(data)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("packing %s: %w", dir, err)
	}
	if err := tw.Close(); err != nil {
		return nil, fmt.Errorf("packing %s: %w", dir, err)
	}
	return out.Bytes(), nil
}
