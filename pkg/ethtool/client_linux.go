package ethtool

import (
	"errors"
	"fmt"
	"time"

	"github.com/mdlayher/genetlink"
	"github.com/mdlayher/netlink"
	"golang.org/x/sys/unix"
)

// ErrNotSupported marks a request the interface's driver does not
// implement (EOPNOTSUPP), such as channel counts on a device without
// queues.
var ErrNotSupported = errors.New("not supported by the driver")

// ErrRefused marks a value the kernel or the driver refused (EINVAL,
// ERANGE), such as a channel count above the driver's maximum.
var ErrRefused = errors.New("refused by the kernel")

// timeout bounds every wait for the kernel's answer.
const timeout = 5 * time.Second

// Client is one generic-netlink socket to the ethtool family, in the
// network namespace of the thread that dialed it.
type Client struct {
	c      *genetlink.Conn
	family genetlink.Family
}

// Dial opens the socket in the calling thread's network namespace and
// looks the ethtool family up.
func Dial() (*Client, error) {
	c, err := genetlink.Dial(nil)
	if err != nil {
		return nil, fmt.Errorf("generic netlink: %w", err)
	}
	// The kernel's own words ("requested channel count exceeds maximum")
	// say more than an errno; failing to ask for them loses only those.
	_ = c.SetOption(netlink.ExtendedAcknowledge, true)
	f, err := c.GetFamily(unix.ETHTOOL_GENL_NAME)
	if err != nil {
		c.Close()
		return nil, fmt.Errorf("generic netlink family %q: %w", unix.ETHTOOL_GENL_NAME, err)
	}
	return &Client{c: c, family: f}, nil
}

// Close closes the socket.
func (c *Client) Close() error {
	return c.c.Close()
}

// execute sends one request and returns the attributes of its reply (nil
// for a request acknowledged without one).
func (c *Client) execute(cmd uint8, attrs []byte, flags netlink.HeaderFlags) ([]byte, error) {
	if err := c.c.SetDeadline(time.Now().Add(timeout)); err != nil {
		return nil, err
	}
	msgs, err := c.c.Execute(genetlink.Message{
		Header: genetlink.Header{Command: cmd, Version: c.family.Version},
		Data:   attrs,
	}, c.family.ID, netlink.Request|flags)
	if err != nil {
		return nil, kernelError(err)
	}
	if len(msgs) == 0 {
		return nil, nil
	}
	return msgs[0].Data, nil
}

// kernelError marks the refusals a caller can name to a user. The kernel's
// extended acknowledgement message is already in err's text.
func kernelError(err error) error {
	var kind error
	switch {
	case errors.Is(err, unix.EOPNOTSUPP):
		kind = ErrNotSupported
	case errors.Is(err, unix.EINVAL), errors.Is(err, unix.ERANGE):
		kind = ErrRefused
	}
	if kind != nil {
		return fmt.Errorf("%w: %w", kind, err)
	}
	return err
}

// Features returns the interface's features, named.
// Equivalent to: ethtool --show-features $ifName
func (c *Client) Features(ifName string) (*Features, error) {
	req, err := strsetRequest(ifName)
	if err != nil {
		return nil, err
	}
	data, err := c.execute(unix.ETHTOOL_MSG_STRSET_GET, req, 0)
	if err != nil {
		return nil, fmt.Errorf("feature names of %q: %w", ifName, err)
	}
	names, err := decodeStrset(data)
	if err != nil {
		return nil, fmt.Errorf("feature names of %q: %w", ifName, err)
	}
	ae := netlink.NewAttributeEncoder()
	encodeHeader(ae, unix.ETHTOOL_A_FEATURES_HEADER, ifName, unix.ETHTOOL_FLAG_COMPACT_BITSETS)
	if req, err = ae.Encode(); err != nil {
		return nil, err
	}
	if data, err = c.execute(unix.ETHTOOL_MSG_FEATURES_GET, req, 0); err != nil {
		return nil, fmt.Errorf("features of %q: %w", ifName, err)
	}
	f, err := decodeFeatures(data, names)
	if err != nil {
		return nil, fmt.Errorf("features of %q: %w", ifName, err)
	}
	return f, nil
}

// SetFeatures asks for each feature of wanted, by Name, to be on or off as
// its Wanted says, in one request, and leaves the others. The kernel turns
// on only what the driver and the other features allow: read Features
// after to see what is active.
// Equivalent to: ethtool --features $ifName name on|off ...
func (c *Client) SetFeatures(ifName string, wanted []Feature) error {
	if len(wanted) == 0 {
		return nil
	}
	req, err := featuresSetRequest(ifName, wanted)
	if err != nil {
		return err
	}
	if _, err := c.execute(unix.ETHTOOL_MSG_FEATURES_SET, req, netlink.Acknowledge); err != nil {
		return fmt.Errorf("setting features of %q: %w", ifName, err)
	}
	return nil
}

// Channels returns the interface's channel counts and maximums. A driver
// without channels gives an error wrapping ErrNotSupported.
// Equivalent to: ethtool --show-channels $ifName
func (c *Client) Channels(ifName string) (Channels, error) {
	ae := netlink.NewAttributeEncoder()
	encodeHeader(ae, unix.ETHTOOL_A_CHANNELS_HEADER, ifName, 0)
	req, err := ae.Encode()
	if err != nil {
		return Channels{}, err
	}
	data, err := c.execute(unix.ETHTOOL_MSG_CHANNELS_GET, req, 0)
	if err != nil {
		return Channels{}, fmt.Errorf("channels of %q: %w", ifName, err)
	}
	ch, err := decodeChannels(data)
	if err != nil {
		return Channels{}, fmt.Errorf("channels of %q: %w", ifName, err)
	}
	return ch, nil
}

// SetChannels sets the counts of set that are not nil, in one request.
// Equivalent to: ethtool --set-channels $ifName rx N tx N other N combined N
func (c *Client) SetChannels(ifName string, set ChannelCounts) error {
	if set == (ChannelCounts{}) {
		return nil
	}
	req, err := channelsSetRequest(ifName, set)
	if err != nil {
		return err
	}
	if _, err := c.execute(unix.ETHTOOL_MSG_CHANNELS_SET, req, netlink.Acknowledge); err != nil {
		return fmt.Errorf("setting channels of %q: %w", ifName, err)
	}
	return nil
}
