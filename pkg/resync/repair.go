package resync

import (
	"context"
	"errors"
	"fmt"

	"cnisuite/pkg/firewall/fwapi"
)

// Part is one thing of an attachment a plugin's RepairFunc looks at: the
// firewall rules (Rules), a sysctl.
type Part struct {
	// Check says what of the part is gone, in Outcome.Missing's words.
	Check func(ctx context.Context) (gone []string, err error)
	// Put puts back what Check found gone.
	Put func(ctx context.Context) error
}

// Repair is the body of a RepairFunc: it checks the parts in order and,
// unless dryRun, puts back each one found gone before going on. It
// returns everything found gone, and stops at the first error.
func Repair(ctx context.Context, dryRun bool, parts ...Part) ([]string, error) {
	var missing []string
	for _, p := range parts {
		gone, err := p.Check(ctx)
		if err != nil {
			return missing, err
		}
		if len(gone) == 0 {
			continue
		}
		missing = append(missing, gone...)
		if dryRun {
			continue
		}
		if err := p.Put(ctx); err != nil {
			return missing, err
		}
	}
	return missing, nil
}

// Rules is the part of an attachment's firewall rules r, called what: gone
// when the backend's Check finds one missing, put back by its Ensure (one
// transaction per family), which runs only then. backend is asked for only
// when r holds rules.
func Rules(what string, backend func(context.Context) (fwapi.Backend, error), o fwapi.Owner, r fwapi.Rules) Part {
	var fw fwapi.Backend
	return Part{
		Check: func(ctx context.Context) ([]string, error) {
			if r.Empty() {
				return nil, nil
			}
			var err error
			if fw, err = backend(ctx); err != nil {
				return nil, err
			}
			err = fw.Check(ctx, o, r)
			if errors.Is(err, fwapi.ErrMissing) {
				return []string{what}, nil
			}
			if err != nil {
				return nil, fmt.Errorf("%s: %w", what, err)
			}
			return nil, nil
		},
		Put: func(ctx context.Context) error {
			if err := fw.Ensure(ctx, o, r); err != nil {
				return fmt.Errorf("%s: %w", what, err)
			}
			return nil
		},
	}
}
