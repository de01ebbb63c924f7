package types

import (
	"encoding/json"
	"errors"
	"fmt"
)

// Error kinds. Plugins wrap one of them (see Errorf) and the skel turns the
// kind into its CNI error code in one place, Code.
var (
	ErrIncompatibleVersion = errors.New("incompatible CNI version")
	ErrUnsupportedField    = errors.New("unsupported field")
	ErrUnknownContainer    = errors.New("unknown container")
	ErrInvalidEnv          = errors.New("invalid environment variables")
	ErrIO                  = errors.New("I/O failure")
	ErrDecoding            = errors.New("failed to decode content")
	ErrInvalidConfig       = errors.New("invalid network configuration")
	ErrTryAgain            = errors.New("try again later")
	ErrNotAvailable        = errors.New("plugin not available")
	ErrLimitedConnectivity = errors.New("plugin not available; existing containers may have limited connectivity")
)

// CNI error codes, as listed by the specification.
const (
	CodeIncompatibleVersion uint = 1
	CodeUnsupportedField    uint = 2
	CodeUnknownContainer    uint = 3
	CodeInvalidEnv          uint = 4
	CodeIO                  uint = 5
	CodeDecoding            uint = 6
	CodeInvalidConfig       uint = 7
	CodeTryAgain            uint = 11
	CodeNotAvailable        uint = 50
	CodeLimitedConnectivity uint = 51
	CodeInternal            uint = 999
)

var kindCodes = []struct {
	kind error
	code uint
}{
	{ErrIncompatibleVersion, CodeIncompatibleVersion},
	{ErrUnsupportedField, CodeUnsupportedField},
	{ErrUnknownContainer, CodeUnknownContainer},
	{ErrInvalidEnv, CodeInvalidEnv},
	{ErrIO, CodeIO},
	{ErrDecoding, CodeDecoding},
	{ErrInvalidConfig, CodeInvalidConfig},
	{ErrTryAgain, CodeTryAgain},
	{ErrNotAvailable, CodeNotAvailable},
	{ErrLimitedConnectivity, CodeLimitedConnectivity},
}

// kindError is an error of a known kind with its own message.
type kindError struct {
	kind error
	err  error
}

func (e *kindError) Error() string { return e.err.Error() }

// Unwrap exposes both the kind and the wrapped cause to errors.Is and errors.As.
func (e *kindError) Unwrap() []error { return []error{e.kind, e.err} }

// Errorf returns an error of the given kind whose message is the formatted
// text; %w may wrap a further cause.
func Errorf(kind error, format string, a ...any) error {
	return &kindError{kind: kind, err: fmt.Errorf(format, a...)}
}

// Error is the error object of the CNI protocol, printed on stdout. An Error
// returned by a delegated plugin passes through with its code unchanged.
type Error struct {
	CNIVersion string `json:"cniVersion,omitempty"`
	Code       uint   `json:"code"`
	Msg        string `json:"msg"`
	Details    string `json:"details,omitempty"`
}

// Error returns the message, with details when there are some.
func (e *Error) Error() string {
	if e.Details == "" {
		return e.Msg
	}
	return e.Msg + "; " + e.Details
}

// Code returns the CNI error code err maps to: the code of a wrapped *Error,
// else the code of its kind, else CodeInternal.
func Code(err error) uint {
	var wire *Error
	if errors.As(err, &wire) {
		return wire.Code
	}
	for _, kc := range kindCodes {
		if errors.Is(err, kc.kind) {
			return kc.code
		}
	}
	return CodeInternal
}

// ToError turns any error into the wire object, at the given protocol version.
// A wrapped *Error keeps its code and details; its message gains the context
// added around it.
func ToError(err error, cniVersion string) *Error {
	var wire *Error
	if errors.As(err, &wire) {
		out := *wire
		out.CNIVersion = cniVersion
		if err.Error() != wire.Error() {
			out.Msg = err.Error()
			out.Details = ""
		}
		return &out
	}
	return &Error{CNIVersion: cniVersion, Code: Code(err), Msg: err.Error()}
}

// DecodeError reads an error object printed by a plugin.
func DecodeError(data []byte) (*Error, error) {
	var e Error
	if err := json.Unmarshal(data, &e); err != nil {
		return nil, Errorf(ErrDecoding, "decoding plugin error: %w", err)
	}
	if e.Code == 0 && e.Msg == "" {
		return nil, Errorf(ErrDecoding, "plugin error has neither code nor msg: %q", data)
	}
	return &e, nil
}
