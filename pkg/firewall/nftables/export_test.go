package nftables

// The reference plugins' chain names and comment hash, for the external
// test of DeleteReference, which writes what the reference plugins write.
var (
	RefMasqChain = refMasqChain
	RefDNChain   = refDNChain
	RefHash16    = refHash16
)
