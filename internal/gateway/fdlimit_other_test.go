//go:build !unix

package gateway_test

func openFilesLimit() uint64 { return 0 }
