// The SigV4 signer of the s3 sender against AWS's published example (S3, "GET Object"), and the
// object locations it signs. The conformance suite checks the same signer against the AWS gate.
import t from 'tap';
import { objectLocation } from '../src/s3/sender.ts';
import { createSigner, uriEncode } from '../src/sigv4.ts';

t.test("AWS's example: GET /test.txt with a Range header", async (t) => {
  // https://docs.aws.amazon.com/AmazonS3/latest/API/sig-v4-header-based-auth.html, "Example: GET Object"
  const sign = createSigner(
    { accessKeyId: 'AKIAIOSFODNN7EXAMPLE', secretAccessKey: 'wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY' },
    'us-east-1',
    's3',
  );
  const headers: Record<string, string> = { host: 'examplebucket.s3.amazonaws.com', range: 'bytes=0-9' };
  sign('GET', '/test.txt', headers, '', new Date('2013-05-24T00:00:00Z'));
  t.equal(headers['x-amz-content-sha256'], 'e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855');
  t.equal(headers['x-amz-date'], '20130524T000000Z');
  t.equal(
    headers.authorization,
    'AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/20130524/us-east-1/s3/aws4_request, ' +
      'SignedHeaders=host;range;x-amz-content-sha256;x-amz-date, ' +
      'Signature=f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41',
  );
});

t.test('a session token is sent and signed', async (t) => {
  const sign = createSigner({ accessKeyId: 'AKID', secretAccessKey: 's', sessionToken: 'tok' }, 'eu-west-1', 's3');
  const headers: Record<string, string> = { host: 'h' };
  sign('PUT', '/k', headers, 'x');
  t.equal(headers['x-amz-security-token'], 'tok');
  t.match(headers.authorization, /SignedHeaders=host;x-amz-content-sha256;x-amz-date;x-amz-security-token,/);
});

t.test('object locations: path style with an endpoint, by host on AWS unless the bucket has dots', async (t) => {
  t.same(objectLocation('http://127.0.0.1:9000/base/', 'us-east-1', 'b', 'a/b c/ü.json'), {
    origin: 'http://127.0.0.1:9000',
    host: '127.0.0.1:9000',
    path: `/base/b/a/b%20c/${uriEncode('ü')}.json`,
  });
  t.same(objectLocation(undefined, 'eu-west-1', 'my-bucket', 'k'), {
    origin: 'https://my-bucket.s3.eu-west-1.amazonaws.com',
    host: 'my-bucket.s3.eu-west-1.amazonaws.com',
    path: '/k',
  });
  t.same(objectLocation(undefined, 'cn-north-1', 'my.bucket', "it's"), {
    origin: 'https://s3.cn-north-1.amazonaws.com.cn',
    host: 's3.cn-north-1.amazonaws.com.cn',
    path: '/my.bucket/it%27s',
  });
});
