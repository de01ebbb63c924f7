package types

// DecodeFresh decodes a configuration (Decode: encoding/json, errors with
// their JSON path) into a value fresh makes, new(T) when fresh is nil:
// fresh sets the defaults a key left out keeps.
func DecodeFresh[T any](data []byte, fresh func() *T) (*T, error) {
	v := new(T)
	if fresh != nil {
		v = fresh()
	}
	if err := Decode(data, v); err != nil {
		return nil, err
	}
	return v, nil
}

// versionHead is the cniVersion of a configuration.
type versionHead struct {
	CNIVersion string `json:"cniVersion"`
}

// DecodeVersion reads the cniVersion of a configuration.
func DecodeVersion(data []byte) (string, error) {
	h, err := DecodeFresh[versionHead](data, nil)
	if err != nil {
		return "", err
	}
	return h.CNIVersion, nil
}
