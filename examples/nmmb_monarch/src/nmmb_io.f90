! Shared helpers of the NMMB-MONARCH stand-in programs: the run namelist,
! grid files (fixed-format ASCII), the model grid's geography and the
! smoothing kernel every program uses as its "work scale".
!
! Grid file format: one header line "FIELD <name> <nx> <ny>" followed by
! nx*ny values, 6 per line (ES16.8E2), or 4 per line (ES25.17E3) for
! restarts so that a restart read back is bit-identical to the model state.
module nmmb_io
  implicit none
  integer, parameter :: dp = kind(1.0d0)
  real(dp), parameter :: pi = 3.14159265358979323846_dp

  integer :: days = 3, nx = 64, ny = 48
  integer :: fixed_work = 20, var_work = 10, model_steps = 240, post_work = 10
  integer :: nhist = 4
  namelist /nmmb/ days, nx, ny, fixed_work, var_work, model_steps, post_work, nhist

contains

  subroutine die(msg)
    character(*), intent(in) :: msg
    write(0, '(a)') 'nmmb: error: ' // trim(msg)
    stop 1
  end subroutine die

  function arg(i) result(s)
    integer, intent(in) :: i
    character(len=1024) :: s
    if (command_argument_count() < i) then
      write(s, '(a,i0)') 'missing command-line argument ', i
      call die(s)
    end if
    call get_command_argument(i, s)
  end function arg

  function iarg(i) result(v)
    integer, intent(in) :: i
    integer :: v, ios
    character(len=1024) :: s
    s = arg(i)
    read(s, *, iostat=ios) v
    if (ios /= 0) call die('argument ' // trim(s) // ' is not an integer')
  end function iarg

  subroutine need_args(n, usage)
    integer, intent(in) :: n
    character(*), intent(in) :: usage
    if (command_argument_count() /= n) then
      write(0, '(a)') 'usage: ' // usage
      stop 2
    end if
  end subroutine need_args

  subroutine read_namelist(path)
    character(*), intent(in) :: path
    integer :: u, ios
    open(newunit=u, file=trim(path), status='old', action='read', iostat=ios)
    if (ios /= 0) call die('cannot open namelist ' // trim(path))
    read(u, nml=nmmb, iostat=ios)
    if (ios /= 0) call die('bad &nmmb namelist in ' // trim(path))
    close(u)
    if (nx < 8 .or. ny < 8) call die('nx and ny must be >= 8')
    if (days < 1) call die('days must be >= 1')
  end subroutine read_namelist

  subroutine write_namelist(path)
    character(*), intent(in) :: path
    integer :: u
    open(newunit=u, file=trim(path), status='replace', action='write')
    write(u, '(a)') '&nmmb'
    write(u, '(a,i0)') '  days = ', days
    write(u, '(a,i0)') '  nx = ', nx
    write(u, '(a,i0)') '  ny = ', ny
    write(u, '(a,i0)') '  fixed_work = ', fixed_work
    write(u, '(a,i0)') '  var_work = ', var_work
    write(u, '(a,i0)') '  model_steps = ', model_steps
    write(u, '(a,i0)') '  post_work = ', post_work
    write(u, '(a,i0)') '  nhist = ', nhist
    write(u, '(a)') '/'
    close(u)
  end subroutine write_namelist

  ! ---- grid files ---------------------------------------------------------
  subroutine open_out(path, u)
    character(*), intent(in) :: path
    integer, intent(out) :: u
    integer :: ios
    open(newunit=u, file=trim(path), status='replace', action='write', iostat=ios)
    if (ios /= 0) call die('cannot write ' // trim(path))
  end subroutine open_out

  subroutine open_in(path, u)
    character(*), intent(in) :: path
    integer, intent(out) :: u
    integer :: ios
    open(newunit=u, file=trim(path), status='old', action='read', iostat=ios)
    if (ios /= 0) call die('cannot read ' // trim(path))
  end subroutine open_in

  subroutine put_field(u, name, a)
    integer, intent(in) :: u
    character(*), intent(in) :: name
    real(dp), intent(in) :: a(:, :)
    write(u, '(a,1x,a,1x,i0,1x,i0)') 'FIELD', trim(name), size(a, 1), size(a, 2)
    write(u, '(6ES16.8E2)') a
  end subroutine put_field

  subroutine put_exact(u, name, a)
    integer, intent(in) :: u
    character(*), intent(in) :: name
    real(dp), intent(in) :: a(:, :)
    write(u, '(a,1x,a,1x,i0,1x,i0)') 'FIELD', trim(name), size(a, 1), size(a, 2)
    write(u, '(4ES25.17E3)') a
  end subroutine put_exact

  ! Read the next field of an open file; its name must be `name` when given.
  subroutine get_field(u, a, name)
    integer, intent(in) :: u
    real(dp), allocatable, intent(out) :: a(:, :)
    character(*), intent(in), optional :: name
    character(len=16) :: tag
    character(len=64) :: fname
    integer :: n1, n2, ios
    read(u, *, iostat=ios) tag, fname, n1, n2
    if (ios /= 0 .or. tag /= 'FIELD') call die('grid file: expected a FIELD header')
    if (present(name)) then
      if (trim(fname) /= trim(name)) call die('grid file: expected field ' // trim(name) // &
                                              ', found ' // trim(fname))
    end if
    allocate(a(n1, n2))
    read(u, *, iostat=ios) a
    if (ios /= 0) call die('grid file: short field ' // trim(fname))
  end subroutine get_field

  subroutine write_one(path, name, a)
    character(*), intent(in) :: path, name
    real(dp), intent(in) :: a(:, :)
    integer :: u
    call open_out(path, u)
    call put_field(u, name, a)
    close(u)
  end subroutine write_one

  subroutine read_one(path, a, name)
    character(*), intent(in) :: path
    real(dp), allocatable, intent(out) :: a(:, :)
    character(*), intent(in), optional :: name
    integer :: u
    call open_in(path, u)
    if (present(name)) then
      call get_field(u, a, name)
    else
      call get_field(u, a)
    end if
    close(u)
    if (size(a, 1) /= nx .or. size(a, 2) /= ny) &
      call die('grid file ' // trim(path) // ' does not match the namelist grid')
  end subroutine read_one

  ! ---- geography of the model grid ---------------------------------------
  ! A regional domain: longitudes -30..60 E, latitudes 0..60 N (North Africa,
  ! Europe, the Middle East), cell centres.
  pure function lon(i) result(x)
    integer, intent(in) :: i
    real(dp) :: x
    x = -30.0_dp + 90.0_dp * (real(i, dp) - 0.5_dp) / real(nx, dp)
  end function lon

  pure function lat(j) result(y)
    integer, intent(in) :: j
    real(dp) :: y
    y = 60.0_dp * (real(j, dp) - 0.5_dp) / real(ny, dp)
  end function lat

  ! Analytic terrain height (m) at a point: three Gaussian ranges.
  pure function height(x, y) result(h)
    real(dp), intent(in) :: x, y
    real(dp) :: h
    h = 2500.0_dp * exp(-((x - 5.0_dp)**2 / 60.0_dp + (y - 31.0_dp)**2 / 8.0_dp)) &
      + 3000.0_dp * exp(-((x - 10.0_dp)**2 / 40.0_dp + (y - 46.0_dp)**2 / 4.0_dp)) &
      + 1800.0_dp * exp(-((x - 45.0_dp)**2 / 30.0_dp + (y - 38.0_dp)**2 / 20.0_dp)) &
      + 300.0_dp * (1.0_dp + sin(x / 7.0_dp) * cos(y / 5.0_dp))
  end function height

  ! How desert-like a land point is (0..1): the Sahara and Arabia belt.
  pure function desertness(x, y) result(d)
    real(dp), intent(in) :: x, y
    real(dp) :: d
    d = exp(-((y - 24.0_dp) / 7.0_dp)**2) * (0.6_dp + 0.4_dp * cos((x - 15.0_dp) / 25.0_dp))
    d = max(0.0_dp, min(1.0_dp, d))
  end function desertness

  ! ---- the work kernel ----------------------------------------------------
  ! `iters` passes of a 5-point weighted smoother, periodic in x, clamped in
  ! y: each program's "work scale" is the number of passes it runs.
  subroutine smooth(a, iters, w)
    real(dp), intent(inout) :: a(:, :)
    integer, intent(in) :: iters
    real(dp), intent(in) :: w
    real(dp), allocatable :: b(:, :)
    integer :: it, i, j, m, n, ip, im, jp, jm
    m = size(a, 1); n = size(a, 2)
    allocate(b(m, n))
    do it = 1, iters
      do j = 1, n
        jp = min(j + 1, n); jm = max(j - 1, 1)
        do i = 1, m
          ip = i + 1; if (ip > m) ip = 1
          im = i - 1; if (im < 1) im = m
          b(i, j) = (1.0_dp - 4.0_dp * w) * a(i, j) + w * (a(ip, j) + a(im, j) + a(i, jp) + a(i, jm))
        end do
      end do
      a = b
    end do
  end subroutine smooth

  ! Bilinear interpolation of a coarse field covering the same domain
  ! (corner-aligned) onto the model grid.
  subroutine interp(c, a)
    real(dp), intent(in) :: c(:, :)
    real(dp), intent(out) :: a(:, :)
    integer :: i, j, i0, j0, mc, nc
    real(dp) :: fx, fy, x, y
    mc = size(c, 1); nc = size(c, 2)
    do j = 1, size(a, 2)
      y = (real(j, dp) - 0.5_dp) / real(size(a, 2), dp) * real(nc - 1, dp) + 1.0_dp
      j0 = min(int(y), nc - 1); fy = y - j0
      do i = 1, size(a, 1)
        x = (real(i, dp) - 0.5_dp) / real(size(a, 1), dp) * real(mc - 1, dp) + 1.0_dp
        i0 = min(int(x), mc - 1); fx = x - i0
        a(i, j) = (1 - fx) * (1 - fy) * c(i0, j0) + fx * (1 - fy) * c(i0 + 1, j0) &
                + (1 - fx) * fy * c(i0, j0 + 1) + fx * fy * c(i0 + 1, j0 + 1)
      end do
    end do
  end subroutine interp

end module nmmb_io
