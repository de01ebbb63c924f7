package types

import (
	"errors"
	"reflect"
	"testing"
)

func TestParseArgs(t *testing.T) {
	tests := []struct {
		name  string
		in    string
		known []string
		want  Args
		kind  error
	}{
		{"empty", "", nil, Args{}, nil},
		{"known keys", "IP=10.0.0.5;MAC=00:11:22:33:44:55", nil, Args{"IP": "10.0.0.5", "MAC": "00:11:22:33:44:55"}, nil},
		{"k8s keys", "K8S_POD_NAMESPACE=ns;K8S_POD_NAME=p;K8S_POD_INFRA_CONTAINER_ID=x;K8S_POD_UID=u", nil,
			Args{"K8S_POD_NAMESPACE": "ns", "K8S_POD_NAME": "p", "K8S_POD_INFRA_CONTAINER_ID": "x", "K8S_POD_UID": "u"}, nil},
		{"value with equals", "IP=a=b", nil, Args{"IP": "a=b"}, nil},
		{"trailing semicolon", "IP=1.2.3.4;", nil, Args{"IP": "1.2.3.4"}, nil},
		{"empty value", "MAC=", nil, Args{"MAC": ""}, nil},
		{"unknown key", "FOO=bar", nil, nil, ErrUnsupportedField},
		{"case sensitive", "ip=1.2.3.4", nil, nil, ErrUnsupportedField},
		{"extra known", "FOO=bar", []string{"FOO"}, Args{"FOO": "bar"}, nil},
		{"ignore unknown", "IgnoreUnknown=1;FOO=bar", nil, Args{"IgnoreUnknown": "1", "FOO": "bar"}, nil},
		{"ignore unknown TRUE", "IgnoreUnknown=TRUE;FOO=bar", nil, Args{"IgnoreUnknown": "TRUE", "FOO": "bar"}, nil},
		{"ignore unknown false", "IgnoreUnknown=false;FOO=bar", nil, nil, ErrUnsupportedField},
		{"ignore unknown bad", "IgnoreUnknown=maybe", nil, nil, ErrInvalidEnv},
		{"no equals", "IP", nil, nil, ErrInvalidEnv},
		{"empty key", "=x", nil, nil, ErrInvalidEnv},
		{"duplicate", "IP=1;IP=2", nil, nil, ErrInvalidEnv},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseArgs(tt.in, tt.known...)
			if tt.kind != nil {
				if !errors.Is(err, tt.kind) {
					t.Fatalf("ParseArgs(%q) = %v, %v; want error of kind %v", tt.in, got, err, tt.kind)
				}
				return
			}
			if err != nil || !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("ParseArgs(%q) = %v, %v; want %v", tt.in, got, err, tt.want)
			}
		})
	}
}

func TestUnknownKeyIsNamedAndCoded(t *testing.T) {
	_, err := ParseArgs("IP=1.2.3.4;FOO=bar")
	if Code(err) != CodeUnsupportedField || err == nil || !contains([]string{err.Error()}, err.Error()) {
		t.Fatalf("error = %v (code %d), want code 2", err, Code(err))
	}
	if want := "CNI_ARGS: unknown key(s) FOO (set IgnoreUnknown=1 to ignore them)"; err.Error() != want {
		t.Fatalf("error = %q, want %q", err, want)
	}
}
