package csiclient

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// maxListed bounds the entries a missing socket's hint names.
const maxListed = 8

// missingSocketHint says what the directory of a missing socket holds,
// sockets first (the driver may listen under another name), so that a
// typo in --endpoint is seen at once.
func missingSocketHint(path string) string {
	dir := filepath.Dir(path)
	entries, err := os.ReadDir(dir)
	if err != nil {
		return fmt.Sprintf("; the directory %s does not exist either (is the driver running, and with this endpoint?)", dir)
	}
	var socks, others []string
	for _, e := range entries {
		if e.Type()&os.ModeSocket != 0 {
			socks = append(socks, e.Name())
		} else {
			name := e.Name()
			if e.IsDir() {
				name += "/"
			}
			others = append(others, name)
		}
	}
	sort.Strings(socks)
	sort.Strings(others)
	if len(socks)+len(others) == 0 {
		return fmt.Sprintf("; %s is empty (is the driver running, and with this endpoint?)", dir)
	}
	var parts []string
	if len(socks) > 0 {
		parts = append(parts, "sockets: "+listSome(socks))
	} else {
		parts = append(parts, "no socket")
	}
	if len(others) > 0 {
		parts = append(parts, "other entries: "+listSome(others))
	}
	return fmt.Sprintf("; %s has %s", dir, strings.Join(parts, "; "))
}

func listSome(names []string) string {
	if len(names) <= maxListed {
		return strings.Join(names, ", ")
	}
	return fmt.Sprintf("%s and %d more", strings.Join(names[:maxListed], ", "), len(names)-maxListed)
}
