package manifests

import (
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// manifestFiles lists the .yaml, .yml and .json files of dir in lexical
// order; recursive, those of the whole tree (as kubectl -R walks it),
// otherwise those of dir alone, and its subdirectories apart.
func manifestFiles(dir string, recursive bool) (files, subdirs []string, err error) {
	isManifest := func(name string) bool {
		switch strings.ToLower(filepath.Ext(name)) {
		case ".yaml", ".yml", ".json":
			return true
		}
		return false
	}
	if recursive {
		err = filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
			if err == nil && !d.IsDir() && isManifest(d.Name()) {
				files = append(files, path)
			}
			return err
		})
		return files, nil, err
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, nil, err
	}
	for _, e := range entries {
		switch {
		case e.IsDir():
			subdirs = append(subdirs, e.Name())
		case isManifest(e.Name()):
			files = append(files, filepath.Join(dir, e.Name()))
		}
	}
	sort.Strings(files)
	return files, subdirs, nil
}
