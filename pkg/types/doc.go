// Package types holds the CNI wire types shared by every plugin of the suite:
// the network configuration, CNI_ARGS, the error object and one in-memory
// result model with codecs for every specification version.
package types
