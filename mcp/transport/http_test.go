package transport

import (
	"errors"
	"testing"
)

func TestResolveListenAddr(t *testing.T) {
	t.Parallel()
	cases := []struct {
		p    ListenParams
		want string
		err  bool
	}{
		{ListenParams{Addr: ":8765"}, "127.0.0.1:8765", false},
		{ListenParams{Addr: "127.0.0.1:0"}, "127.0.0.1:0", false},
		{ListenParams{Addr: "localhost:80"}, "localhost:80", false},
		{ListenParams{Addr: "[::1]:80"}, "[::1]:80", false},
		{ListenParams{Addr: "0.0.0.0:80"}, "", true},
		{ListenParams{Addr: "0.0.0.0:80", AllowRemote: true}, "", true},
		{ListenParams{Addr: "0.0.0.0:80", AllowRemote: true, HTTPOptions: HTTPOptions{Token: "t"}}, "0.0.0.0:80", false},
		{ListenParams{Addr: "8765"}, "", true},
	}
	for _, c := range cases {
		got, err := ResolveListenAddr(c.p)
		if (err != nil) != c.err || got != c.want {
			t.Errorf("ResolveListenAddr(%+v) = %q, %v", c.p, got, err)
		}
		if c.p.Addr == "0.0.0.0:80" && !c.p.AllowRemote && !errors.Is(err, ErrRemoteAddr) {
			t.Errorf("remote address error %v should wrap ErrRemoteAddr", err)
		}
	}
}
