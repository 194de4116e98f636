package sidecars

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"golang.org/x/sys/unix"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	"github.com/csi-kubelet-sim/csi-kubelet-sim/node"
)

// recordDir is the simulator's directory under the root dir (the node's
// journals live there too); a record is a file of its own in it.
const recordDir = ".csi-kubelet-sim"

// recordSuffix ends the sidecars' record files.
const recordSuffix = ".controller"

// Record entry kinds: what was about to be done, and what was done.
const (
	kindCreating    = "creating"    // CreateVolume about to be called (with the request)
	kindCreated     = "created"     // CreateVolume answered (with the handle)
	kindDeleted     = "deleted"     // DeleteVolume answered
	kindFailed      = "failed"      // CreateVolume refused: nothing was made
	kindKept        = "kept"        // kept on purpose (--keep-volumes, Retain)
	kindPublishing  = "publishing"  // ControllerPublishVolume about to be called
	kindPublished   = "published"   // ControllerPublishVolume answered
	kindUnpublished = "unpublished" // ControllerUnpublishVolume answered
)

// entry is one line of a record.
type entry struct {
	Kind    string          `json:"k"`
	Name    string          `json:"name,omitempty"`
	Handle  string          `json:"handle,omitempty"`
	NodeID  string          `json:"node_id,omitempty"`
	Request json.RawMessage `json:"req,omitempty"`
	Time    time.Time       `json:"t"`
}

// record is the sidecars' own journal: every volume created and every
// volume published, written down (and fsync'd) before the call and after
// it, so that after a kill -9 `cleanup` knows what to unpublish and delete.
type record struct {
	mu   sync.Mutex
	path string
	f    *os.File
}

// openRecord opens the run's record on first use.
func (c *Controllers) openRecord() (*record, error) {
	if c.record != nil {
		return c.record, nil
	}
	r, err := openRecordIn(c.cfg.RootDir, "sidecars")
	if err != nil {
		return nil, err
	}
	c.record = r
	return r, nil
}

// openRecordIn makes a new record under root's simulator dir, its file
// named after its writer.
func openRecordIn(root, writer string) (*record, error) {
	// From the root dir's descriptor, made if missing: a symlink or a
	// mount at the simulator's dir would carry the record outside the
	// root dir.
	dirfd, err := node.OpenSimDir(root, true)
	if err != nil {
		return nil, fmt.Errorf("controller record: %w", err)
	}
	defer unix.Close(dirfd)
	name := fmt.Sprintf("%s-%d-%d%s", writer, os.Getpid(), time.Now().UnixNano(), recordSuffix)
	p := filepath.Join(root, recordDir, name)
	fd, err := unix.Openat(dirfd, name, unix.O_CREAT|unix.O_EXCL|unix.O_WRONLY|unix.O_APPEND|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o600)
	if err != nil {
		return nil, fmt.Errorf("controller record %s: %w", p, err)
	}
	_ = unix.Fsync(dirfd)
	return &record{path: p, f: os.NewFile(uintptr(fd), p)}, nil
}

// write appends one entry and syncs it to disk. A nil record (nothing
// was ever created) takes nothing.
func (r *record) write(e entry) error {
	if r == nil {
		return nil
	}
	e.Time = time.Now().UTC()
	b, err := json.Marshal(e)
	if err != nil {
		return err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, err := r.f.Write(append(b, '\n')); err != nil {
		return fmt.Errorf("controller record %s: %w", r.path, err)
	}
	if err := r.f.Sync(); err != nil {
		return fmt.Errorf("controller record %s: %w", r.path, err)
	}
	return nil
}

// remove deletes the record once nothing it lists is left, and the
// directory when nothing else is in it.
func (r *record) remove() {
	if r == nil {
		return
	}
	_ = r.removeFile()
	r.f.Close()
}

// removeFile removes the record and the simulator's dir when empty, from
// the root dir's descriptor, and only while the record's name is still
// the file this process has open: a directory mounted over the
// simulator's dir since is refused, its files untouched.
func (r *record) removeFile() error {
	var st unix.Stat_t
	if err := unix.Fstat(int(r.f.Fd()), &st); err != nil {
		return fmt.Errorf("controller record %s: %w", r.path, err)
	}
	root := filepath.Dir(filepath.Dir(r.path))
	if err := node.RemoveInSimDir(root, filepath.Base(r.path), &st); err != nil {
		return err
	}
	node.RemoveSimDir(root)
	return nil
}

// requestJSON is the CreateVolume request as the record keeps it: without
// its secrets, which never go to disk.
func requestJSON(req *csi.CreateVolumeRequest) json.RawMessage {
	r := proto.Clone(req).(*csi.CreateVolumeRequest)
	r.Secrets = nil
	b, err := protojson.Marshal(r)
	if err != nil {
		return nil
	}
	return b
}

// Records lists the sidecars' records under root: runs that left volumes
// or attachments behind.
// A symlink or a mount at the simulator's dir is refused: its records
// are another directory's.
func Records(root string) ([]string, error) {
	fd, err := node.OpenSimDir(root, false)
	if node.IsSymlinkRefused(err) {
		return nil, err
	}
	if err == nil {
		unix.Close(fd)
	}
	return filepath.Glob(filepath.Join(root, recordDir, "*"+recordSuffix))
}

// CheckRoot refuses a root dir that holds an earlier run's record, as
// node.CheckRoot refuses one with an earlier run's journal.
func CheckRoot(root string) error {
	rs, err := Records(root)
	if err != nil {
		return err
	}
	if len(rs) > 0 {
		return fmt.Errorf("root dir %s holds volumes an earlier run provisioned or attached and did not delete (%s); finish it with `csi-kubelet-sim cleanup --root-dir %s --endpoint <the driver's socket>` before running here again", root, strings.Join(rs, ", "), root)
	}
	return nil
}

// pending is what a record says is left: volumes created and not deleted
// or kept (with their request when the handle never came back), and
// attachments published and not unpublished.
type pending struct {
	volumes   []pendingVolume
	published []entry
}

type pendingVolume struct {
	name, handle string
	request      json.RawMessage
}

// readRecord reads a record; a torn last line (killed mid-write) is
// ignored.
func readRecord(p string) (*pending, error) {
	f, err := openRecord(p, os.O_RDONLY)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	vols := map[string]*pendingVolume{}
	var order []string
	pubs := map[string]entry{}
	var pubOrder []string
	// No line limit: a record holds the CreateVolume request, whose
	// parameters and secrets-free fields are as long as the input allows.
	br := bufio.NewReader(f)
	var readErr error
	for {
		line, err := br.ReadBytes('\n')
		if err != nil {
			if err != io.EOF {
				readErr = err
			}
			if len(line) == 0 {
				break
			}
		}
		var e entry
		if json.Unmarshal(line, &e) != nil {
			if err != nil {
				break
			}
			continue
		}
		switch e.Kind {
		case kindCreating:
			if vols[e.Name] == nil {
				order = append(order, e.Name)
			}
			vols[e.Name] = &pendingVolume{name: e.Name, request: e.Request}
		case kindCreated:
			if v := vols[e.Name]; v != nil {
				v.handle = e.Handle
			}
		case kindDeleted, kindKept, kindFailed:
			delete(vols, e.Name)
		case kindPublishing:
			key := e.Handle + "\x00" + e.NodeID
			if _, ok := pubs[key]; !ok {
				pubOrder = append(pubOrder, key)
			}
			pubs[key] = e
		case kindUnpublished:
			delete(pubs, e.Handle+"\x00"+e.NodeID)
		}
		if err != nil {
			break
		}
	}
	out := &pending{}
	for _, k := range pubOrder {
		if e, ok := pubs[k]; ok {
			out.published = append(out.published, e)
		}
	}
	for _, n := range order {
		if v := vols[n]; v != nil {
			out.volumes = append(out.volumes, *v)
		}
	}
	return out, readErr
}

// openRecord opens an existing record without following a symlink and
// without blocking: a FIFO named like one would block the open forever,
// deaf to signals, with the root dir's lock held. Anything but a regular
// file is refused.
func openRecord(p string, flag int) (*os.File, error) {
	f, err := os.OpenFile(p, flag|unix.O_NOFOLLOW|unix.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	fi, err := f.Stat()
	if err == nil && !fi.Mode().IsRegular() {
		what := "not a regular file"
		if fi.Mode()&os.ModeNamedPipe != 0 {
			what = "a FIFO, not a regular file"
		}
		err = fmt.Errorf("%s: not a record the simulator made; refused, nothing written to it or removed", what)
	}
	if err == nil {
		err = setBlocking(f)
	}
	if err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// setBlocking clears O_NONBLOCK on f's descriptor.
func setBlocking(f *os.File) error {
	rc, err := f.SyscallConn()
	if err != nil {
		return err
	}
	var serr error
	if err := rc.Control(func(fd uintptr) { serr = unix.SetNonblock(int(fd), false) }); err != nil {
		return err
	}
	return serr
}
