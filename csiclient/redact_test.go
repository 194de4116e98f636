package csiclient

import (
	"strings"
	"testing"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/protobuf/proto"
)

const (
	jwtA = "eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJ4In0.c2ln"   // sha256 starts ec97fe60
	jwtB = "eyJhbGciOiJFUzI1NiJ9.eyJzdWIiOiJ5In0.c2lnMg" // sha256 starts 1d00920c
	// The kubelet's tokens value (docs/kubelet.md §4.3).
	tokensJSON = `{"":{"token":"` + jwtA + `","expirationTimestamp":"2026-01-02T15:04:05Z"},"vault":{"token":"` + jwtB + `","expirationTimestamp":"2026-01-02T16:04:05Z"}}`
)

func publishRequest() *csi.NodePublishVolumeRequest {
	return &csi.NodePublishVolumeRequest{
		VolumeId:          "vol-1",
		PublishContext:    map[string]string{"devicePath": "/dev/xvdb"},
		StagingTargetPath: "/s",
		TargetPath:        "/t",
		VolumeCapability: &csi.VolumeCapability{
			AccessType: &csi.VolumeCapability_Mount{Mount: &csi.VolumeCapability_MountVolume{}},
			AccessMode: &csi.VolumeCapability_AccessMode{Mode: csi.VolumeCapability_AccessMode_SINGLE_NODE_WRITER},
		},
		Readonly: true,
		Secrets:  map[string]string{"user": "admin", "password": "hunter2"},
		VolumeContext: map[string]string{
			"size":    "small",
			"auth":    "Bearer " + jwtA,
			TokensKey: tokensJSON,
		},
	}
}

// Secret values are stripped and keys kept; tokens keep audiences and
// expiry with a fingerprint instead of the token; JWTs elsewhere become
// fingerprints; proto field names, sorted keys, no HTML escaping.
func TestRedactorJSON(t *testing.T) {
	got := string(Redactor{}.JSON(publishRequest()))
	const want = `{"publish_context":{"devicePath":"/dev/xvdb"},"readonly":true,` +
		`"secrets":{"password":"***stripped***","user":"***stripped***"},` +
		`"staging_target_path":"/s","target_path":"/t",` +
		`"volume_capability":{"access_mode":{"mode":"SINGLE_NODE_WRITER"},"mount":{}},` +
		`"volume_context":{"auth":"Bearer <token sha256:ec97fe60>",` +
		`"csi.storage.k8s.io/serviceAccount.tokens":"{\"\":{\"token\":\"<token sha256:ec97fe60>\",\"expirationTimestamp\":\"2026-01-02T15:04:05Z\"},\"vault\":{\"token\":\"<token sha256:1d00920c>\",\"expirationTimestamp\":\"2026-01-02T16:04:05Z\"}}",` +
		`"size":"small"},"volume_id":"vol-1"}`
	if got != want {
		t.Errorf("JSON:\n got %s\nwant %s", got, want)
	}
	for _, secret := range []string{"hunter2", "admin", jwtA, jwtB} {
		if strings.Contains(got, secret) {
			t.Errorf("output contains %q", secret)
		}
	}
}

func TestRedactorShowSecrets(t *testing.T) {
	got := string(Redactor{ShowSecrets: true}.JSON(publishRequest()))
	for _, s := range []string{`"password":"hunter2"`, `"user":"admin"`, jwtA, jwtB} {
		if !strings.Contains(got, s) {
			t.Errorf("ShowSecrets output lacks %q: %s", s, got)
		}
	}
}

// The message given is not changed, and the output is the same whatever
// order the maps were filled in.
func TestRedactorStableAndNonDestructive(t *testing.T) {
	req := publishRequest()
	first := string(Redactor{}.JSON(req))
	if !proto.Equal(req, publishRequest()) {
		t.Errorf("redaction changed the request")
	}
	other := publishRequest()
	other.VolumeContext = map[string]string{TokensKey: tokensJSON, "auth": "Bearer " + jwtA, "size": "small"}
	for range 20 {
		if got := string(Redactor{}.JSON(other)); got != first {
			t.Fatalf("unstable output:\n%s\n%s", got, first)
		}
	}
	if (Redactor{}).JSON(nil) != nil {
		t.Errorf("JSON(nil) not nil")
	}
}

// With serviceAccountTokenInSecrets the tokens are in secrets: still
// fingerprinted with their shape, not blanked; a tokens value that is not
// the kubelet's JSON is stripped.
func TestRedactTokensInSecretsAndBadTokens(t *testing.T) {
	req := &csi.NodePublishVolumeRequest{
		Secrets:       map[string]string{TokensKey: tokensJSON},
		VolumeContext: map[string]string{TokensKey: "not json " + jwtA},
	}
	got := string(Redactor{}.JSON(req))
	const want = `{"secrets":{"csi.storage.k8s.io/serviceAccount.tokens":"{\"\":{\"token\":\"<token sha256:ec97fe60>\",\"expirationTimestamp\":\"2026-01-02T15:04:05Z\"},\"vault\":{\"token\":\"<token sha256:1d00920c>\",\"expirationTimestamp\":\"2026-01-02T16:04:05Z\"}}"},` +
		`"volume_context":{"csi.storage.k8s.io/serviceAccount.tokens":"***stripped***"}}`
	if got != want {
		t.Errorf("JSON:\n got %s\nwant %s", got, want)
	}
}

func TestRedactTokens(t *testing.T) {
	got, ok := RedactTokens(tokensJSON)
	const want = `{"":{"token":"<token sha256:ec97fe60>","expirationTimestamp":"2026-01-02T15:04:05Z"},"vault":{"token":"<token sha256:1d00920c>","expirationTimestamp":"2026-01-02T16:04:05Z"}}`
	if !ok || got != want {
		t.Errorf("RedactTokens = %s, %t\nwant %s", got, ok, want)
	}
	if _, ok := RedactTokens("[]"); ok {
		t.Errorf("a JSON array accepted")
	}
	if got := TokenFingerprint(jwtA); got != "<token sha256:ec97fe60>" {
		t.Errorf("TokenFingerprint = %s", got)
	}
}

// NodeStage secrets are csi_secret fields too.
func TestRedactStageSecrets(t *testing.T) {
	got := string(Redactor{}.JSON(&csi.NodeStageVolumeRequest{VolumeId: "v", Secrets: map[string]string{"key": "s3cr3t"}}))
	if want := `{"secrets":{"key":"***stripped***"},"volume_id":"v"}`; got != want {
		t.Errorf("JSON = %s, want %s", got, want)
	}
}
