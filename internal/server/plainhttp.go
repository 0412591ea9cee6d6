package server

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
)

// errPlainHTTP ends the TLS handshake of a connection that spoke plain HTTP
// and has been answered.
var errPlainHTTP = errors.New("client sent a plain HTTP request to the HTTPS port (answered with 400)")

// plainHTTPListener hands out connections that answer a client speaking
// plain HTTP to the HTTPS port with a Cosmos DB error response (400, a JSON
// body whose message the SDKs show) instead of net/http's text line
// "Client sent an HTTP request to an HTTPS server", which the SDKs cannot
// parse. net/http writes that line itself when the handshake fails and
// offers no hook to change it, so the connection looks at the first byte
// the client sends, before the TLS server sees it: a TLS record starts
// with 0x16, an HTTP request with a method's capital letter.
type plainHTTPListener struct{ net.Listener }

func (l plainHTTPListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return &sniffConn{Conn: c}, nil
}

// sniffConn is a connection whose first Read checks the first byte. It is
// read only by the TLS handshake's goroutine, under the deadlines the
// server set for the handshake, so a client that sends nothing holds
// nothing beyond them.
type sniffConn struct {
	net.Conn
	sniffed bool
}

func (c *sniffConn) Read(p []byte) (int, error) {
	if c.sniffed || len(p) == 0 {
		return c.Conn.Read(p)
	}
	c.sniffed = true
	var first [1]byte
	if _, err := io.ReadFull(c.Conn, first[:]); err != nil {
		return 0, err
	}
	if first[0] < 'A' || first[0] > 'Z' {
		p[0] = first[0]
		return 1, nil
	}
	c.answerPlainHTTP(first[0])
	return 0, errPlainHTTP
}

// answerPlainHTTP reads the plain HTTP request that starts with first (its
// headers, at most maxHeaderBytes held, and up to 2 MiB of its body,
// discarded as it arrives, so that closing the connection does not reset it
// before the client reads the answer) and answers it with 400. It held 2
// MiB of headers (a security hunt: 4 MB of memory for each connection
// sending one long header line, before any authentication).
func (c *sniffConn) answerPlainHTTP(first byte) {
	host := "<host:port>"
	in := &io.LimitedReader{R: io.MultiReader(bytes.NewReader([]byte{first}), c.Conn), N: maxHeaderBytes}
	req, err := http.ReadRequest(bufio.NewReader(in))
	if err == nil {
		if req.Host != "" {
			host = req.Host
		}
		in.N += 2 << 20
		_, _ = io.Copy(io.Discard, req.Body)
	}
	body, _ := json.Marshal(map[string]string{
		"code": "BadRequest",
		"message": fmt.Sprintf("This server serves HTTPS only, and the request was plain HTTP: "+
			"use the endpoint https://%s/ (with the server's certificate trusted, or verification skipped as for the emulator).", host),
	})
	_, _ = io.WriteString(c.Conn, "HTTP/1.1 400 Bad Request\r\n"+
		"Content-Type: application/json\r\n"+
		"Content-Length: "+strconv.Itoa(len(body))+"\r\n"+
		"x-ms-request-charge: 0\r\n"+
		"Connection: close\r\n\r\n"+string(body))
}
