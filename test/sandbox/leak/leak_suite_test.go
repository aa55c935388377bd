package leak_test

import (
	"testing"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

func TestLeak(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "Leak Suite")
}
