package supervisor

import (
	"net/netip"
	"slices"
	"testing"

	"golang.org/x/net/dns/dnsmessage"
)

// answer builds a DNS answer to a question for name, with the given
// records.
func answer(t testing.TB, name string, typ dnsmessage.Type, rcode dnsmessage.RCode, build func(b *dnsmessage.Builder)) []byte {
	b := dnsmessage.NewBuilder(nil, dnsmessage.Header{ID: 7, Response: true, RCode: rcode})
	b.StartQuestions()
	b.Question(dnsmessage.Question{Name: dnsmessage.MustNewName(name), Type: typ, Class: dnsmessage.ClassINET})
	b.StartAnswers()
	if build != nil {
		build(&b)
	}
	msg, err := b.Finish()
	if err != nil {
		t.Fatal(err)
	}
	return msg
}

func hdr(name string, typ dnsmessage.Type) dnsmessage.ResourceHeader {
	return dnsmessage.ResourceHeader{Name: dnsmessage.MustNewName(name), Type: typ, Class: dnsmessage.ClassINET, TTL: 30}
}

func TestTreeNamesLearn(t *testing.T) {
	a1, a2, a6 := netip.MustParseAddr("192.0.2.1"), netip.MustParseAddr("192.0.2.2"), netip.MustParseAddr("2001:db8::1")
	evil := netip.MustParseAddr("192.0.2.66")
	tn := newTreeNames()
	tn.hosts.path = "/nonexistent"
	// A plain answer, then the AAAA of the same name: both kept.
	tn.learn(answer(t, "API.Example.com.", dnsmessage.TypeA, dnsmessage.RCodeSuccess, func(b *dnsmessage.Builder) {
		b.AResource(hdr("api.example.com.", dnsmessage.TypeA), dnsmessage.AResource{A: a1.As4()})
	}))
	tn.learn(answer(t, "api.example.com.", dnsmessage.TypeAAAA, dnsmessage.RCodeSuccess, func(b *dnsmessage.Builder) {
		b.AAAAResource(hdr("api.example.com.", dnsmessage.TypeAAAA), dnsmessage.AAAAResource{AAAA: a6.As16()})
	}))
	// A CNAME chain, its records out of order: the name asked for gets
	// the addresses at the end of the chain.
	tn.learn(answer(t, "www.example.org.", dnsmessage.TypeA, dnsmessage.RCodeSuccess, func(b *dnsmessage.Builder) {
		b.AResource(hdr("edge.cdn.example.", dnsmessage.TypeA), dnsmessage.AResource{A: a2.As4()})
		b.CNAMEResource(hdr("www.example.org.", dnsmessage.TypeCNAME), dnsmessage.CNAMEResource{CNAME: dnsmessage.MustNewName("edge.cdn.example.")})
		// A record for a name off the chain: not believed.
		b.AResource(hdr("github.com.", dnsmessage.TypeA), dnsmessage.AResource{A: evil.As4()})
	}))
	// Failures and non-answers teach nothing.
	tn.learn(answer(t, "gone.example.", dnsmessage.TypeA, dnsmessage.RCodeNameError, nil))
	tn.learn([]byte("not dns"))
	tn.learn(nil)
	for _, c := range []struct {
		a    netip.Addr
		want []string
	}{
		{a1, []string{"api.example.com"}},
		{a6, []string{"api.example.com"}},
		{a2, []string{"www.example.org"}},
		{evil, nil},
	} {
		if got := tn.names(c.a); !slices.Equal(got, c.want) && !(len(got) == 0 && len(c.want) == 0) {
			t.Errorf("names(%v) = %v, want %v", c.a, got, c.want)
		}
	}
	// Once the tree serves DNS itself, nothing more is learned.
	tn.serving.Store(true)
	tn.learn(answer(t, "late.example.", dnsmessage.TypeA, dnsmessage.RCodeSuccess, func(b *dnsmessage.Builder) {
		b.AResource(hdr("late.example.", dnsmessage.TypeA), dnsmessage.AResource{A: evil.As4()})
	}))
	if got := tn.names(evil); len(got) != 0 {
		t.Errorf("learned %v after the tree bound port 53", got)
	}
}

func TestParseHosts(t *testing.T) {
	m := parseHosts([]byte("# comment\n127.0.0.1\tlocalhost Localhost.Localdomain\n::1 localhost ip6-localhost # trailing\n10.0.0.5 mirror.example.com bad_name!\nnot-an-address name\n"))
	if got := m[netip.MustParseAddr("127.0.0.1")]; !slices.Equal(got, []string{"localhost", "localhost.localdomain"}) {
		t.Errorf("127.0.0.1: %v", got)
	}
	if got := m[netip.MustParseAddr("::1")]; !slices.Equal(got, []string{"localhost", "ip6-localhost"}) {
		t.Errorf("::1: %v", got)
	}
	if got := m[netip.MustParseAddr("10.0.0.5")]; !slices.Equal(got, []string{"mirror.example.com"}) {
		t.Errorf("10.0.0.5: %v", got)
	}
}

// FuzzTreeNamesLearn: any datagram, whatever it holds, is read without a
// panic, and nothing is learned from what is not an answer.
func FuzzTreeNamesLearn(f *testing.F) {
	f.Add(answer(f, "a.example.", dnsmessage.TypeA, dnsmessage.RCodeSuccess, func(b *dnsmessage.Builder) {
		b.AResource(hdr("a.example.", dnsmessage.TypeA), dnsmessage.AResource{A: [4]byte{192, 0, 2, 9}})
	}))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		tn := newTreeNames()
		tn.hosts.path = "/nonexistent"
		tn.learn(b)
	})
}
