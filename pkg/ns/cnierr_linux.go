package ns

import (
	"errors"

	"cnisuite/pkg/types"
)

// CNIError gives an error from opening or entering the namespace at path
// (CNI_NETNS) its CNI kind: a path that does not exist or is not a network
// namespace is a bad environment variable (code 4); anything else is
// returned unchanged.
func CNIError(path string, err error) error {
	if errors.Is(err, ErrNotExist) || errors.Is(err, ErrNotNetNS) {
		return types.Errorf(types.ErrInvalidEnv, "CNI_NETNS %q: %w", path, err)
	}
	return err
}
