package sidecars

import (
	"sync"

	"github.com/container-storage-interface/spec/lib/go/csi"
)

// VolumeRecord writes down the volumes another part of the simulator
// makes by CreateVolume (conformance's run volumes) in the sidecars' own
// record, so that after a kill -9 `cleanup` (Cleanup) deletes them as it
// deletes the provisioner's: the request before CreateVolume, the handle
// after it, and the deletion after DeleteVolume.
type VolumeRecord struct {
	root, writer string
	mu           sync.Mutex
	r            *record
	err          error // opening failed: every later call fails the same
	open         map[string]bool
}

// NewVolumeRecord returns a record under root's simulator dir, made on
// the first Creating; writer names its file.
func NewVolumeRecord(root, writer string) *VolumeRecord {
	return &VolumeRecord{root: root, writer: writer, open: map[string]bool{}}
}

func (v *VolumeRecord) get() (*record, error) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.r == nil && v.err == nil {
		v.r, v.err = openRecordIn(v.root, v.writer)
	}
	return v.r, v.err
}

func (v *VolumeRecord) mark(name string, open bool) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if open {
		v.open[name] = true
	} else {
		delete(v.open, name)
	}
}

// Creating is written before CreateVolume: the request without its
// secrets, so that `cleanup` can ask again for a handle never received.
func (v *VolumeRecord) Creating(req *csi.CreateVolumeRequest) error {
	r, err := v.get()
	if err != nil {
		return err
	}
	v.mark(req.Name, true)
	return r.write(entry{Kind: kindCreating, Name: req.Name, Request: requestJSON(req)})
}

// Created is written after CreateVolume answered.
func (v *VolumeRecord) Created(name, handle string) error {
	r, err := v.get()
	if err != nil {
		return err
	}
	return r.write(entry{Kind: kindCreated, Name: name, Handle: handle})
}

// Failed is written after CreateVolume failed for sure (nothing was
// made). A call that may have made the volume (a timeout, the driver
// gone) is not Failed: the record keeps it for `cleanup`.
func (v *VolumeRecord) Failed(name string, cause error) error {
	if Uncertain(cause) {
		return nil
	}
	r, err := v.get()
	if err != nil {
		return err
	}
	v.mark(name, false)
	return r.write(entry{Kind: kindFailed, Name: name})
}

// Deleted is written after DeleteVolume answered.
func (v *VolumeRecord) Deleted(name, handle string) error {
	r, err := v.get()
	if err != nil {
		return err
	}
	v.mark(name, false)
	return r.write(entry{Kind: kindDeleted, Name: name, Handle: handle})
}

// Close removes the record when every volume it lists was deleted (or
// never made), and keeps it for `cleanup` otherwise; it tells which.
func (v *VolumeRecord) Close() (kept bool) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.r == nil {
		return false
	}
	if len(v.open) > 0 {
		v.r.f.Close()
		return true
	}
	v.r.remove()
	return false
}

// Uncertain tells whether a failed CreateVolume may still have made the
// volume (the provisioner's final-error rule).
func Uncertain(err error) bool { return uncertain(err) }
