package types

import (
	"errors"
	"testing"
)

func TestValidateNames(t *testing.T) {
	good := []string{"a", "abc-DEF_1.2", "0", "Z9", "a-", "a..b"}
	bad := []string{"", "-a", ".a", "_a", "a/b", "a b", "é", "aé", "a\x00", "a\n", "a:b", "a+b"}
	for _, s := range good {
		if err := ValidateContainerID(s); err != nil {
			t.Errorf("ValidateContainerID(%q) = %v", s, err)
		}
		if err := ValidateNetworkName(s); err != nil {
			t.Errorf("ValidateNetworkName(%q) = %v", s, err)
		}
	}
	for _, s := range bad {
		if err := ValidateContainerID(s); !errors.Is(err, ErrInvalidEnv) {
			t.Errorf("ValidateContainerID(%q) = %v, want ErrInvalidEnv", s, err)
		}
		if err := ValidateNetworkName(s); !errors.Is(err, ErrInvalidConfig) {
			t.Errorf("ValidateNetworkName(%q) = %v, want ErrInvalidConfig", s, err)
		}
	}
	for _, s := range []string{"eth0", "a.b", "123456789012345"} {
		if err := ValidateIfName(s); err != nil {
			t.Errorf("ValidateIfName(%q) = %v", s, err)
		}
	}
	for _, s := range []string{"", ".", "..", "a/b", "a:b", "a\tb", "1234567890123456"} {
		if err := ValidateIfName(s); !errors.Is(err, ErrInvalidEnv) {
			t.Errorf("ValidateIfName(%q) = %v, want ErrInvalidEnv", s, err)
		}
	}
}

func TestCodeAndToError(t *testing.T) {
	err := Errorf(ErrInvalidConfig, "mtu %d: too small", 10)
	if Code(err) != CodeInvalidConfig || err.Error() != "mtu 10: too small" {
		t.Fatalf("Errorf = %q code %d", err, Code(err))
	}
	wire := ToError(err, "1.0.0")
	if wire.Code != 7 || wire.CNIVersion != "1.0.0" || wire.Msg != "mtu 10: too small" {
		t.Fatalf("ToError = %+v", wire)
	}
	cause := errors.New("disk full")
	wrapped := Errorf(ErrIO, "writing lease: %w", cause)
	if !errors.Is(wrapped, cause) || Code(wrapped) != CodeIO {
		t.Fatalf("Errorf loses its cause or kind: %v", wrapped)
	}
	if Code(errors.New("x")) != CodeInternal {
		t.Fatal("unknown error is not 999")
	}
	if _, err := DecodeError([]byte(`{}`)); err == nil {
		t.Fatal("DecodeError({}) succeeded")
	}
}

func TestSchemaMAC(t *testing.T) {
	for s, want := range map[string]bool{
		"0a:1B:2c:3D:4e:5F": true, "00:00:00:00:00:00": true,
		"": false, "0a:1b:2c:3d:4e": false, "0a:1b:2c:3d:4e:5f:": false, "0a-1b-2c-3d-4e-5f": false,
		"0g:1b:2c:3d:4e:5f": false, "0a:1b:2c:3d:4e:5": false, "0a:1b:2c:3d:4e5f0": false,
	} {
		if got := isSchemaMAC(s); got != want {
			t.Errorf("isSchemaMAC(%q) = %v, want %v", s, got, want)
		}
	}
}
